// JLBH's coordinated-omission example, the JLBH side of bench/jlbh_parity.py: 100,000 iterations/s,
// every 10,000th iteration (counted across warm-up and runs) busy-waits 1 ms, correction on, no OS
// jitter thread. candor's examples/hiccup runs the same workload. Usage:
//   java -cp <jlbh classpath>:<dir of this class> JlbhHiccup [iterations] [runs]

import net.openhft.chronicle.jlbh.JLBH;
import net.openhft.chronicle.jlbh.JLBHOptions;
import net.openhft.chronicle.jlbh.JLBHTask;

public class JlbhHiccup implements JLBHTask {
    static final long HICCUP_EVERY = 10_000;
    static final long HICCUP_NS = 1_000_000;

    private JLBH jlbh;
    private long count;

    public static void main(String[] args) {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 400_000;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        JLBHOptions options = new JLBHOptions()
                .warmUpIterations(40_000)
                .iterations(iterations)
                .throughput(100_000)
                .runs(runs)
                .recordOSJitter(false)
                .accountForCoordinatedOmission(true)
                .jlbhTask(new JlbhHiccup());
        new JLBH(options).start();
    }

    @Override
    public void init(JLBH jlbh) {
        this.jlbh = jlbh;
    }

    @Override
    public void run(long startTimeNs) {
        if (count % HICCUP_EVERY == 0) {
            long until = System.nanoTime() + HICCUP_NS;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
        }
        count++;
        jlbh.sample(System.nanoTime() - startTimeNs);
    }
}
