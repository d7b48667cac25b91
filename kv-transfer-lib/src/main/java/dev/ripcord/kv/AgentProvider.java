package dev.ripcord.kv;

import java.util.ServiceLoader;

/** The one {@link TransferAgent.Provider} on the class path, looked up once, when the first agent starts. */
final class AgentProvider {
    static final TransferAgent.Provider INSTANCE = ServiceLoader.load(TransferAgent.Provider.class,
                    TransferAgent.class.getClassLoader()).findFirst()
            .orElseThrow(() -> new IllegalStateException("no " + TransferAgent.Provider.class.getName()
                    + " on the class path: kv-transfer-lib's META-INF/services entry is missing"));

    private AgentProvider() {
    }
}
