// Reads an HdrHistogram interval log with Java's own HistogramLogReader, adds the chosen stream into
// a new Histogram(3), and prints its count, p99.9, max and percentile distribution, so the Rust
// test can compare candor's reader and writers with the reference implementation.
// Usage: CandorInterop FILE TAG|- [START END]
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class CandorInterop {
    public static void main(String[] args) throws Exception {
        HistogramLogReader reader = new HistogramLogReader(args[0]);
        String tag = args[1].equals("-") ? null : args[1];
        boolean ranged = args.length > 3;
        Histogram acc = new Histogram(3);
        int intervals = 0;
        while (true) {
            EncodableHistogram h = ranged
                    ? reader.nextIntervalHistogram(Double.parseDouble(args[2]), Double.parseDouble(args[3]))
                    : reader.nextIntervalHistogram();
            if (h == null) break;
            boolean match = (tag == null) ? h.getTag() == null : tag.equals(h.getTag());
            if (!match) continue;
            acc.add((Histogram) h);
            intervals++;
        }
        System.out.println("intervals " + intervals + " count " + acc.getTotalCount()
                + " p99.9 " + acc.getValueAtPercentile(99.9) + " max " + acc.getMaxValue());
        acc.outputPercentileDistribution(System.out, 5, 1000000.0);
    }
}
