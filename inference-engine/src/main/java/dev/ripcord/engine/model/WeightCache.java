package dev.ripcord.engine.model;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import dev.ripcord.engine.weights.WeightSource;

/**
 * A directory of weight images: the weights a load packs for the engine (the {@link PackedMatrix} panels, norms,
 * embedding rows), written once to a file and then mapped read-only by every engine that loads the same model file
 * with the same panel width. Processes on one host that map the same image share its pages (the page cache holds one
 * copy), where each would otherwise pack a private copy: a prefill and a decode worker on one host hold the weights
 * once. Block-quantized matrices are views of the model file's own mapping and never enter an image.
 *
 * <p>An image is named by the model file's path and identified by its path, size and modification time, the panel
 * width and {@link #FORMAT}; one that does not match is rebuilt, and a rebuild removes the file's older images. It is
 * written to a temporary file, forced to disk and renamed into place, under a file lock per model file (and a monitor
 * per lock file inside this JVM, which holds a file lock for all its threads), so that engines starting together
 * build it once and never map a partial image.
 */
public final class WeightCache {

    /** The image format; a change to {@link ModelWeights}'s allocation order or {@link PackedMatrix}'s layout bumps it. */
    static final int FORMAT = 1;

    private static final byte[] MAGIC = "RIPCORDW".getBytes(StandardCharsets.US_ASCII);

    /** The header's size: the data that follows it stays page-aligned. */
    static final int HEADER_BYTES = 4096;

    private static final String SUFFIX = ".weights";

    /** Serialises loads of one image within this JVM (a {@link FileLock} is held per JVM, not per thread). */
    private static final ConcurrentHashMap<Path, Object> JVM_LOCKS = new ConcurrentHashMap<>();

    private final Path directory;

    public WeightCache(Path directory) {
        this.directory = directory.toAbsolutePath().normalize();
    }

    public Path directory() {
        return directory;
    }

    /** How a {@link Loaded} load got its weights. */
    public enum Origin {
        /** Packed into the engine's own memory: the source has no file, or the cache could not be used. */
        PRIVATE,
        /** Packed into a new image, then mapped from it. */
        BUILT,
        /** Mapped from an image an earlier load wrote. */
        MAPPED
    }

    /**
     * A load's outcome.
     *
     * @param weights the weights
     * @param origin  where they came from
     * @param image   the image mapped, or null when {@link Origin#PRIVATE}
     * @param bytes   bytes of packed weights (in the image, or private)
     * @param problem why the cache was not used, or null
     */
    public record Loaded(ModelWeights weights, Origin origin, Path image, long bytes, String problem) {
        /** One line for a start-up log. */
        public String describe() {
            String size = String.format(Locale.ROOT, "%.1f MB", bytes / 1e6);
            return switch (origin) {
                case PRIVATE -> "packed weights " + size + " in process memory"
                        + (problem == null ? "" : " (weight cache not used: " + problem + ")");
                case BUILT -> "packed weights " + size + " written to " + image + " and mapped (shared)";
                case MAPPED -> "packed weights " + size + " mapped from " + image + " (shared)";
            };
        }
    }

    /**
     * The weights of {@code source} for panel width {@code panelWidth}, mapped into {@code arena} from this cache's
     * image of them (built first if there is none that matches). Without a source file, or when the directory cannot
     * be used, they are packed into {@code arena} instead and {@link Loaded#problem} says why.
     */
    public Loaded load(WeightSource source, int panelWidth, Arena arena) {
        Optional<Path> file = source.sourceFile();
        if (file.isEmpty()) {
            return inArena(source, panelWidth, arena, null);
        }
        String identity;
        String prefix;
        Path image;
        try {
            Path model = file.get().toRealPath();
            BasicFileAttributes attributes = Files.readAttributes(model, BasicFileAttributes.class);
            identity = "format=" + FORMAT + " panel=" + panelWidth + " size=" + attributes.size() + " modified="
                    + attributes.lastModifiedTime().toInstant() + " file=" + model;
            prefix = prefix(model);
            image = directory.resolve(prefix + hash(identity).substring(0, 16) + SUFFIX);
            Files.createDirectories(directory);
        } catch (IOException | UncheckedIOException e) {
            return inArena(source, panelWidth, arena, e.toString());
        }
        long bytes = size(source, panelWidth);
        Path lockFile = directory.resolve(prefix + "lock");
        synchronized (JVM_LOCKS.computeIfAbsent(lockFile, k -> new Object())) {
            try (FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE);
                 FileLock lock = lockChannel.lock()) {
                Origin origin = Origin.MAPPED;
                if (!matches(image, identity, bytes)) {
                    build(source, panelWidth, image, identity, bytes, prefix);
                    origin = Origin.BUILT;
                }
                MemorySegment data = map(image, bytes, arena);
                return new Loaded(ModelWeights.load(source, panelWidth, slices(data, true)), origin, image, bytes,
                        null);
            } catch (IOException | UncheckedIOException e) {
                return inArena(source, panelWidth, arena, e.toString());
            }
        }
    }

    /** The weights of {@code source} packed into {@code arena}, with no cache ({@code problem}: why, or null). */
    public static Loaded inArena(WeightSource source, int panelWidth, Arena arena, String problem) {
        return new Loaded(ModelWeights.load(source, panelWidth, arena), Origin.PRIVATE, null,
                size(source, panelWidth), problem);
    }

    /** Bytes the engine-owned weights of {@code source} take in an image (a sizing pass: nothing is read). */
    static long size(WeightSource source, int panelWidth) {
        long[] total = {0};
        ModelWeights.load(source, panelWidth, new ModelWeights.Store() {
            @Override
            public MemorySegment allocate(long bytes) {
                total[0] = align(total[0]) + bytes;
                return null;
            }

            @Override
            public boolean filled() {
                return true;
            }
        });
        return total[0];
    }

    private static long align(long offset) {
        return (offset + ModelWeights.ALIGNMENT - 1) & -ModelWeights.ALIGNMENT;
    }

    /** A store that hands out consecutive aligned slices of {@code data}. */
    private static ModelWeights.Store slices(MemorySegment data, boolean filled) {
        return new ModelWeights.Store() {
            private long next;

            @Override
            public MemorySegment allocate(long bytes) {
                MemorySegment slice = data.asSlice(align(next), bytes);
                next = align(next) + bytes;
                return slice;
            }

            @Override
            public boolean filled() {
                return filled;
            }
        };
    }

    private static boolean matches(Path image, String identity, long bytes) throws IOException {
        if (!Files.isRegularFile(image) || Files.size(image) != HEADER_BYTES + bytes) {
            return false;
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.READ)) {
            while (header.hasRemaining() && channel.read(header) >= 0) {
                // read the whole header
            }
        }
        return header.position() == HEADER_BYTES && header.flip().equals(header(identity, bytes));
    }

    private static ByteBuffer header(String identity, long bytes) {
        byte[] id = identity.getBytes(StandardCharsets.UTF_8);
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        header.put(MAGIC).putLong(bytes).putInt(id.length).put(id);
        return header.clear();
    }

    private static void build(WeightSource source, int panelWidth, Path image, String identity, long bytes,
                              String prefix) throws IOException {
        Path tmp = Files.createTempFile(image.getParent(), image.getFileName().toString(), ".tmp");
        try {
            try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.READ, StandardOpenOption.WRITE);
                 Arena mapping = Arena.ofConfined()) {
                MemorySegment file = channel.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + bytes, mapping);
                MemorySegment.copy(MemorySegment.ofBuffer(header(identity, bytes)), 0, file, 0, HEADER_BYTES);
                ModelWeights.load(source, panelWidth, slices(file.asSlice(HEADER_BYTES), false));
                file.force();
            }
            try {
                Files.move(tmp, image, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, image, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
        removeOlderImages(image, prefix);
    }

    /**
     * Deletes the model file's images other than {@code image}, under the model's lock (a process that maps one
     * keeps its pages until it unmaps).
     */
    private static void removeOlderImages(Path image, String prefix) throws IOException {
        try (DirectoryStream<Path> siblings = Files.newDirectoryStream(image.getParent(), prefix + "*" + SUFFIX)) {
            for (Path other : siblings) {
                if (!other.equals(image)) {
                    Files.deleteIfExists(other);
                }
            }
        }
    }

    /**
     * The image's data, mapped read-only into {@code arena} and seen as a native segment of that arena. A mapped
     * segment is another class than the arena's own segments, and kernels that see both kinds at one call site
     * compile to slower code: measured on stories15M, one compute thread, an engine whose weights were the mapping's
     * own segment decoded 25-30 % slower than one with private weights. Viewed as a native segment, read-only, over
     * the same pages and with the same lifetime (the mapping is unmapped when {@code arena} closes, and the view is
     * unusable from then on), the weights are the class every other engine segment is.
     */
    private static MemorySegment map(Path image, long bytes, Arena arena) throws IOException {
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.READ)) {
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_ONLY, HEADER_BYTES, bytes, arena);
            return MemorySegment.ofAddress(mapped.address()).reinterpret(bytes, arena, null).asReadOnly();
        }
    }

    /** The model file's part of an image's name: its file name and a hash of its path. */
    private static String prefix(Path model) {
        String name = model.getFileName().toString().replaceAll("[^A-Za-z0-9._]", "_");
        return hash(model.toString()).substring(0, 8) + "-" + name + ".";
    }

    private static String hash(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

}
