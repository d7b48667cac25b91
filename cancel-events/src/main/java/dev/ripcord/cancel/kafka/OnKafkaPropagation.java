package dev.ripcord.cancel.kafka;

import dev.ripcord.cancel.CancelPropagation;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** Matches when {@code ripcord.cancel.propagation} includes Kafka ({@code both}, the default, or {@code kafka}). */
class OnKafkaPropagation extends SpringBootCondition {

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        CancelPropagation propagation = propagation(context);
        return propagation.kafka() == expected()
                ? ConditionOutcome.match("ripcord.cancel.propagation=" + propagation)
                : ConditionOutcome.noMatch("ripcord.cancel.propagation=" + propagation);
    }

    boolean expected() {
        return true;
    }

    static CancelPropagation propagation(ConditionContext context) {
        return Binder.get(context.getEnvironment()).bind("ripcord.cancel.propagation", CancelPropagation.class)
                .orElse(CancelPropagation.BOTH);
    }

    /** The opposite: propagation is {@code in-band} or {@code none}. */
    static final class Not extends OnKafkaPropagation {

        @Override
        boolean expected() {
            return false;
        }
    }
}
