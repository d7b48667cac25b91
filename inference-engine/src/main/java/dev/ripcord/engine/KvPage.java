package dev.ripcord.engine;

import java.lang.foreign.MemorySegment;

/**
 * One page of a sequence's KV cache, as a transfer library sees it.
 *
 * @param sequenceIndex position of this page in its sequence: it holds positions
 *                      {@code [sequenceIndex·pageTokens, (sequenceIndex+1)·pageTokens)}
 * @param poolIndex     the page's index in its {@link KvPagePool}
 * @param poolOffset    byte offset of the page in {@link KvPagePool#segment()}: {@code poolIndex · pageBytes}
 * @param byteSize      {@link KvLayout#pageBytes()}
 * @param segment       the page's bytes (a slice of the pool segment), laid out as {@link KvLayout} describes;
 *                      valid until the owning sequence is freed or the engine closed
 */
public record KvPage(int sequenceIndex, int poolIndex, long poolOffset, long byteSize, MemorySegment segment) {
}
