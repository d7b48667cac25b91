package dev.ripcord.worker;

import java.util.Objects;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;

/**
 * Adds {@code model_name} to every {@code ripcord.*} meter, as vLLM labels its metrics: the served model's id as
 * clients send it. A worker serves one model, so one value per process; a meter that names its model itself keeps
 * its own. Applied by Boot to the registry before any meter is registered (a {@link MeterFilter} bean).
 */
public final class ModelNameTag {

    /** The label's name, vLLM's. */
    public static final String LABEL = "model_name";

    private ModelNameTag() {
    }

    public static MeterFilter filter(String modelName) {
        Objects.requireNonNull(modelName, "modelName");
        return new MeterFilter() {
            @Override
            public Meter.Id map(Meter.Id id) {
                if (id.getName().startsWith("ripcord.") && id.getTag(LABEL) == null) {
                    return id.withTag(Tag.of(LABEL, modelName));
                }
                return id;
            }
        };
    }
}
