package dev.ripcord.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A deliberately naive llama2.c forward pass for tests: plain arrays, double accumulation everywhere, read from a
 * checkpoint file by its own parser. It shares no code with the engine, so agreement means the engine's packing,
 * kernels, paging and chunking all compute the model llama2.c defines.
 */
final class NaiveLlama {
    final int dim;
    final int hidden;
    final int layers;
    final int heads;
    final int kvHeads;
    final int vocab;
    final int seqLen;
    final int hs;
    final int kvDim;
    final float[] emb;
    final float[] rmsAtt;
    final float[] wq;
    final float[] wk;
    final float[] wv;
    final float[] wo;
    final float[] rmsFfn;
    final float[] w1;
    final float[] w2;
    final float[] w3;
    final float[] rmsFinal;
    final float[] wcls;
    /** keys[layer][pos][kvDim] after rotary embedding, values[layer][pos][kvDim]; exposed for layout tests. */
    final double[][][] keys;
    final double[][][] values;

    NaiveLlama(Path checkpoint) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(checkpoint)).order(ByteOrder.LITTLE_ENDIAN);
        dim = b.getInt();
        hidden = b.getInt();
        layers = b.getInt();
        heads = b.getInt();
        kvHeads = b.getInt();
        int v = b.getInt();
        seqLen = b.getInt();
        vocab = Math.abs(v);
        hs = dim / heads;
        kvDim = kvHeads * hs;
        emb = read(b, vocab * dim);
        rmsAtt = read(b, layers * dim);
        wq = read(b, layers * dim * dim);
        wk = read(b, layers * kvDim * dim);
        wv = read(b, layers * kvDim * dim);
        wo = read(b, layers * dim * dim);
        rmsFfn = read(b, layers * dim);
        w1 = read(b, layers * hidden * dim);
        w2 = read(b, layers * dim * hidden);
        w3 = read(b, layers * hidden * dim);
        rmsFinal = read(b, dim);
        read(b, seqLen * hs / 2);
        read(b, seqLen * hs / 2);
        wcls = v > 0 ? emb : read(b, vocab * dim);
        keys = new double[layers][seqLen][];
        values = new double[layers][seqLen][];
    }

    /** A fresh instance (empty cache) sharing {@code other}'s weights. */
    NaiveLlama(NaiveLlama other) {
        dim = other.dim;
        hidden = other.hidden;
        layers = other.layers;
        heads = other.heads;
        kvHeads = other.kvHeads;
        vocab = other.vocab;
        seqLen = other.seqLen;
        hs = other.hs;
        kvDim = other.kvDim;
        emb = other.emb;
        rmsAtt = other.rmsAtt;
        wq = other.wq;
        wk = other.wk;
        wv = other.wv;
        wo = other.wo;
        rmsFfn = other.rmsFfn;
        w1 = other.w1;
        w2 = other.w2;
        w3 = other.w3;
        rmsFinal = other.rmsFinal;
        wcls = other.wcls;
        keys = new double[layers][seqLen][];
        values = new double[layers][seqLen][];
    }

    private static float[] read(ByteBuffer b, int n) {
        float[] out = new float[n];
        b.asFloatBuffer().get(out);
        b.position(b.position() + 4 * n);
        return out;
    }

    /** Runs {@code tokens} from position 0 and returns the logits after the last one. */
    double[] forward(int[] tokens) {
        double[] logits = null;
        for (int pos = 0; pos < tokens.length; pos++) {
            logits = step(tokens[pos], pos);
        }
        return logits;
    }

    double[] step(int token, int pos) {
        double[] x = new double[dim];
        for (int i = 0; i < dim; i++) {
            x[i] = emb[token * dim + i];
        }
        for (int l = 0; l < layers; l++) {
            double[] xb = rmsnorm(x, rmsAtt, l * dim);
            double[] q = matvec(wq, l * dim * dim, xb, dim, dim);
            double[] k = matvec(wk, l * kvDim * dim, xb, kvDim, dim);
            double[] v = matvec(wv, l * kvDim * dim, xb, kvDim, dim);
            rope(q, pos);
            rope(k, pos);
            keys[l][pos] = k;
            values[l][pos] = v;
            double[] att = new double[dim];
            for (int h = 0; h < heads; h++) {
                int g = h / (heads / kvHeads);
                double[] scores = new double[pos + 1];
                double max = Double.NEGATIVE_INFINITY;
                for (int t = 0; t <= pos; t++) {
                    double s = 0;
                    for (int d = 0; d < hs; d++) {
                        s += q[h * hs + d] * keys[l][t][g * hs + d];
                    }
                    scores[t] = s / Math.sqrt(hs);
                    max = Math.max(max, scores[t]);
                }
                double sum = 0;
                for (int t = 0; t <= pos; t++) {
                    scores[t] = Math.exp(scores[t] - max);
                    sum += scores[t];
                }
                for (int t = 0; t <= pos; t++) {
                    for (int d = 0; d < hs; d++) {
                        att[h * hs + d] += scores[t] / sum * values[l][t][g * hs + d];
                    }
                }
            }
            double[] o = matvec(wo, l * dim * dim, att, dim, dim);
            for (int i = 0; i < dim; i++) {
                x[i] += o[i];
            }
            xb = rmsnorm(x, rmsFfn, l * dim);
            double[] h1 = matvec(w1, l * hidden * dim, xb, hidden, dim);
            double[] h3 = matvec(w3, l * hidden * dim, xb, hidden, dim);
            for (int i = 0; i < hidden; i++) {
                h1[i] = h1[i] / (1 + Math.exp(-h1[i])) * h3[i];
            }
            double[] down = matvec(w2, l * dim * hidden, h1, dim, hidden);
            for (int i = 0; i < dim; i++) {
                x[i] += down[i];
            }
        }
        double[] xf = rmsnorm(x, rmsFinal, 0);
        return matvec(wcls, 0, xf, vocab, dim);
    }

    private double[] rmsnorm(double[] x, float[] w, int off) {
        double ss = 0;
        for (double v : x) {
            ss += v * v;
        }
        double inv = 1 / Math.sqrt(ss / x.length + 1e-5);
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = w[off + i] * x[i] * inv;
        }
        return out;
    }

    private static double[] matvec(float[] w, int off, double[] x, int rows, int cols) {
        double[] out = new double[rows];
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < cols; c++) {
                s += w[off + r * cols + c] * x[c];
            }
            out[r] = s;
        }
        return out;
    }

    private void rope(double[] v, int pos) {
        for (int i = 0; i < v.length; i += 2) {
            int j = (i % hs) / 2;
            double angle = pos / Math.pow(10000.0, (2.0 * j) / hs);
            double c = Math.cos(angle);
            double s = Math.sin(angle);
            double v0 = v[i];
            double v1 = v[i + 1];
            v[i] = v0 * c - v1 * s;
            v[i + 1] = v0 * s + v1 * c;
        }
    }
}
