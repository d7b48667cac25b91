package dev.ripcord.model;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * Finds one regular file in a {@code .tar.gz} (an npm package tarball) and streams its bytes, with the JDK alone.
 *
 * <p>Design note: npm writes POSIX ustar archives; a header is 512 bytes (name at 0, size in octal at 124, type at
 * 156, ustar prefix at 345) and each entry's data is padded to 512. PAX ({@code x}, {@code g}) and GNU long-name
 * ({@code L}) records are skipped: the entry looked for has a short name. Only call this on a tarball whose
 * checksum was verified.
 */
final class TarEntryStream {

    private static final int BLOCK = 512;

    private TarEntryStream() {
    }

    /** A stream positioned at the start of {@code entryName}'s data, and that data's length. */
    record Entry(InputStream data, long size) implements AutoCloseable {
        @Override
        public void close() throws IOException {
            data.close();
        }
    }

    /** Opens {@code tarGz} and skips to {@code entryName}; fails if the archive ends without it. */
    static Entry open(Path tarGz, String entryName) throws IOException {
        InputStream in = new GZIPInputStream(new BufferedInputStream(Files.newInputStream(tarGz), 1 << 16), 1 << 16);
        try {
            byte[] header = new byte[BLOCK];
            while (true) {
                if (!readBlock(in, header) || isZero(header)) {
                    throw new IOException("no entry " + entryName + " in " + tarGz.getFileName());
                }
                String name = string(header, 0, 100);
                String prefix = string(header, 345, 155);
                if (!prefix.isEmpty()) {
                    name = prefix + "/" + name;
                }
                long size = octal(header, 124, 12);
                byte type = header[156];
                if ((type == '0' || type == 0) && name.equals(entryName)) {
                    return new Entry(in, size);
                }
                in.skipNBytes(padded(size));
            }
        } catch (IOException | RuntimeException e) {
            in.close();
            throw e;
        }
    }

    private static boolean readBlock(InputStream in, byte[] block) throws IOException {
        int n = in.readNBytes(block, 0, BLOCK);
        if (n == 0) {
            return false;
        }
        if (n < BLOCK) {
            throw new EOFException("truncated tar header");
        }
        return true;
    }

    private static boolean isZero(byte[] block) {
        for (byte b : block) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    private static String string(byte[] header, int offset, int length) {
        int end = offset;
        while (end < offset + length && header[end] != 0) {
            end++;
        }
        return new String(header, offset, end - offset, StandardCharsets.UTF_8);
    }

    private static long octal(byte[] header, int offset, int length) throws IOException {
        String digits = string(header, offset, length).strip();
        try {
            return digits.isEmpty() ? 0 : Long.parseLong(digits, 8);
        } catch (NumberFormatException e) {
            throw new IOException("bad tar size field '" + digits + "'");
        }
    }

    private static long padded(long size) {
        return (size + BLOCK - 1) / BLOCK * BLOCK;
    }
}
