package dev.ripcord.cancel;

/** Which process emitted a {@link CancelEvent}: the service name and the instance ID of that process. */
public record Origin(String service, String instance) {

    public Origin {
        Checks.requireText(service, "origin service");
        Checks.requireText(instance, "origin instance");
    }

    @Override
    public String toString() {
        return service + "/" + instance;
    }
}
