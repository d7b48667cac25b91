package dev.ripcord.cancel.logging;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import ch.qos.logback.classic.AsyncAppender;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;

/**
 * The services' appenders become asynchronous, and a line logged with a request ID in the MDC still carries it when
 * the appender's own thread writes it. A private {@link LoggerContext}, so the test's own logging is untouched.
 */
class AsyncLogAppendersTest {

    @Test
    void theRootsAppendersAreWrappedOnceAndTheRequestIdIsStillOnEveryLine() throws Exception {
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(org.slf4j.MDC.getMDCAdapter()); // the one MDC the services put the request ID in
        context.start();
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> console = new ListAppender<>();
        console.setContext(context);
        console.setName("CONSOLE");
        console.start();
        root.addAppender(console);

        assertThat(AsyncLogAppenders.wrap(context)).isEqualTo(1);
        assertThat(AsyncLogAppenders.wrap(context)).as("idempotent").isZero();
        List<Appender<ILoggingEvent>> appenders = new ArrayList<>();
        root.iteratorForAppenders().forEachRemaining(appenders::add);
        assertThat(appenders).singleElement().isInstanceOf(AsyncAppender.class);
        AsyncAppender async = (AsyncAppender) appenders.getFirst();
        assertThat(async.getAppender("CONSOLE")).isSameAs(console);

        Thread logging = new Thread(() -> RequestMdc.with("client:abcdefghijklmnopqrstuv",
                () -> context.getLogger("dev.ripcord.test").info("a line about the request")));
        logging.start();
        logging.join();
        RequestMdc.with("client:other", () -> { }); // the MDC of the thread that logged is gone; the line keeps it
        async.stop(); // writes what is queued
        context.stop();

        assertThat(console.list).singleElement().satisfies(line -> {
            assertThat(line.getFormattedMessage()).isEqualTo("a line about the request");
            assertThat(line.getMDCPropertyMap()).containsEntry(RequestMdc.KEY, "client:abcdefghijklmnopqrstuv");
        });
    }
}
