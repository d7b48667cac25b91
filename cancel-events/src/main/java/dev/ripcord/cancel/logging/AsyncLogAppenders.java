package dev.ripcord.cancel.logging;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import ch.qos.logback.classic.AsyncAppender;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.context.logging.LoggingApplicationListener;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.event.SmartApplicationListener;

/**
 * Makes every service's log appenders asynchronous: once Boot has configured Logback (its
 * {@link LoggingApplicationListener}, plain or structured console, a file if one is set), each appender of the root
 * logger is wrapped in a Logback {@link AsyncAppender}. A thread that logs (a Netty event loop, an engine loop, a
 * Kafka consumer) then only puts the event in a queue; formatting and writing happen on the appender's own thread,
 * so a slow console or pipe never stalls a decode step, a prefill chunk or an event loop.
 *
 * <p>The request ID stays on every line: an {@link AsyncAppender} captures the event's MDC (with {@code requestId})
 * on the thread that logs, before the event is queued. Nothing is discarded below the queue's capacity
 * ({@code discardingThreshold} 0); past it a line is dropped rather than block the thread that logs
 * ({@code neverBlock}). On shutdown Logback stops the appender, which writes what is still queued.
 *
 * <p>Done in code rather than in a {@code logback-spring.xml} so that Boot keeps choosing the appenders themselves
 * (its {@code logging.*} properties, structured JSON included) exactly as without it. Idempotent: an appender that
 * is already asynchronous is left alone, so a context that configures logging again is wrapped again.
 */
public final class AsyncLogAppenders implements SmartApplicationListener {

    /** Events queued per appender before a line is dropped. */
    static final int QUEUE_SIZE = 8192;

    @Override
    public boolean supportsEventType(Class<? extends ApplicationEvent> eventType) {
        return ApplicationEnvironmentPreparedEvent.class.isAssignableFrom(eventType);
    }

    @Override
    public int getOrder() {
        return LoggingApplicationListener.DEFAULT_ORDER + 1; // after Boot has configured the appenders
    }

    @Override
    public void onApplicationEvent(ApplicationEvent event) {
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
            wrap(context);
        }
    }

    /** Wraps each of the root logger's synchronous appenders in an {@link AsyncAppender}; returns how many. */
    static int wrap(LoggerContext context) {
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        List<Appender<ILoggingEvent>> sync = new ArrayList<>();
        for (Iterator<Appender<ILoggingEvent>> it = root.iteratorForAppenders(); it.hasNext(); ) {
            Appender<ILoggingEvent> appender = it.next();
            if (!(appender instanceof AsyncAppender)) {
                sync.add(appender);
            }
        }
        for (Appender<ILoggingEvent> appender : sync) {
            AsyncAppender async = new AsyncAppender();
            async.setContext(context);
            async.setName("ASYNC_" + appender.getName());
            async.setQueueSize(QUEUE_SIZE);
            async.setDiscardingThreshold(0);
            async.setNeverBlock(true);
            async.setIncludeCallerData(false);
            async.addAppender(appender);
            async.start();
            root.addAppender(async);
            root.detachAppender(appender);
        }
        return sync.size();
    }
}
