package dev.ripcord.stack;

import java.net.URI;
import java.net.http.HttpRequest;

import dev.ripcord.protocol.InternalApi;

/**
 * The credentials test clients send, found from a service's URL alone, so that a client built with just a URL (as
 * every fixture is) authenticates: the API key and internal token of the {@link LocalStack} this JVM started at
 * that address, else the environment ({@code RIPCORD_API_KEY}, {@code RIPCORD_INTERNAL_TOKEN}: for benchmarks run
 * against a stack started elsewhere, e.g. by {@code ./ripcord up}, which prints its key), else none.
 */
public final class TestCredentials {

    private TestCredentials() {
    }

    /** The API key for the gateway at {@code gateway}, or null (an open gateway, or nothing known). */
    public static String apiKey(URI gateway) {
        return LocalStack.at(gateway).map(LocalStack::apiKey).orElseGet(() -> System.getenv("RIPCORD_API_KEY"));
    }

    /** The internal token of the stack whose worker is at {@code worker}, or null. */
    public static String internalToken(URI worker) {
        return LocalStack.at(worker).map(LocalStack::internalToken)
                .orElseGet(() -> System.getenv("RIPCORD_INTERNAL_TOKEN"));
    }

    /** {@code request} with {@code Authorization: Bearer <apiKey>}, unless the key is null. */
    public static HttpRequest.Builder withApiKey(HttpRequest.Builder request, String apiKey) {
        return apiKey == null ? request : request.header("Authorization", "Bearer " + apiKey);
    }

    /** {@code request} with the internal token header, unless the token is null. */
    public static HttpRequest.Builder withInternalToken(HttpRequest.Builder request, String token) {
        return token == null ? request : request.header(InternalApi.INTERNAL_TOKEN_HEADER, token);
    }
}
