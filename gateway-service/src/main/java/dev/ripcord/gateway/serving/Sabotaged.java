package dev.ripcord.gateway.serving;

import dev.ripcord.cancel.Sabotage;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationFailedException;
import reactor.core.publisher.Flux;

/**
 * The gateway's bench-only sabotage hooks, in one place ({@link Sabotage}; refused unless the fault bench started
 * the gateway, docs/operations.md). Each breaks the first request, not warm-up traffic, that produces a token.
 */
final class Sabotaged {

    private Sabotaged() {
    }

    /** {@code tokens}, unchanged unless a gateway sabotage is armed and this is its request. */
    static Flux<GeneratedToken> tokens(Flux<GeneratedToken> tokens, boolean warmUp) {
        if (warmUp || !(Sabotage.ERROR_500.armed() || Sabotage.FLIP_TOKEN.armed())) {
            return tokens;
        }
        return tokens.map(token -> {
            if (token.index() == 0 && Sabotage.ERROR_500.fire()) {
                throw new GenerationFailedException("sabotaged: error-500 (a bench-only switch)", null);
            }
            if (token.index() == 0 && Sabotage.FLIP_TOKEN.fire()) {
                return new GeneratedToken(token.index(), token.tokenId() ^ 1, token.finishReason(), token.logprobs());
            }
            return token;
        });
    }
}
