package dev.ripcord.tokenizer.chat;

import java.util.AbstractCollection;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.tree.TagNode;

/**
 * The steps and time one render may still take ({@link ChatTemplateLimits#maxSteps()},
 * {@link ChatTemplateLimits#timeBudget()}). Jinjava has no such budget of its own: its output and collection limits
 * bound what a template builds, not how long it loops, so a template of three nested {@code range(1000)} loops with
 * an empty body would run a billion iterations. Each node Jinjava renders and each loop iteration is charged here;
 * the one that goes past the budget throws, and so does every one after it, so the whole render unwinds at once.
 *
 * <p>One budget per render, bound to the rendering thread for its duration ({@link #CURRENT}): Jinjava calls the
 * node hook and the {@code for} tag without any per-render context of ours.
 */
final class RenderBudget {
    static final ThreadLocal<RenderBudget> CURRENT = new ThreadLocal<>();

    private final long maxSteps;
    private final long deadlineNanos;
    private long steps;

    RenderBudget(ChatTemplateLimits limits) {
        this.maxSteps = limits.maxSteps();
        this.deadlineNanos = System.nanoTime() + limits.timeBudget().toNanos();
    }

    /** Charges one step to the budget of the render on this thread (none outside a render). */
    static void charge() {
        RenderBudget budget = CURRENT.get();
        if (budget != null) {
            budget.step();
        }
    }

    private void step() {
        if (++steps > maxSteps) {
            throw new ChatTemplateException("chat template took more than %d steps".formatted(maxSteps),
                    ChatTemplateException.Kind.LIMIT_EXCEEDED);
        }
        if (System.nanoTime() - deadlineNanos > 0) {
            throw new ChatTemplateException("chat template ran past its time budget",
                    ChatTemplateException.Kind.LIMIT_EXCEEDED);
        }
    }

    /**
     * Jinjava's {@code for} with every iteration charged. The collection is wrapped, not copied, and keeps its size,
     * so {@code loop.length}, {@code loop.last} and {@code loop.revindex} stay what they were.
     */
    static final class ChargedForTag extends com.hubspot.jinjava.lib.tag.ForTag {
        private static final long serialVersionUID = 1L;

        @Override
        public String renderForCollection(TagNode tagNode, JinjavaInterpreter interpreter, List<String> loopVars,
                Object collection) {
            return super.renderForCollection(tagNode, interpreter, loopVars, charged(collection));
        }

        private static Object charged(Object collection) {
            if (collection instanceof Collection<?> c) {
                return new AbstractCollection<Object>() {
                    @Override
                    public Iterator<Object> iterator() {
                        return charged(c.iterator());
                    }

                    @Override
                    public int size() {
                        return c.size();
                    }
                };
            }
            if (collection instanceof Iterator<?> it) {
                return charged(it);
            }
            return collection; // maps (bounded by maxListSize), arrays, single values: charged per node instead
        }

        private static Iterator<Object> charged(Iterator<?> it) {
            return new Iterator<>() {
                @Override
                public boolean hasNext() {
                    return it.hasNext();
                }

                @Override
                public Object next() {
                    charge();
                    return it.next();
                }
            };
        }
    }
}
