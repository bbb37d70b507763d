// JLBH's coordinated-omission example, the JLBH side of bench/jlbh_parity.py: 100,000 iterations/s,
// every 10,000th iteration (counted across warm-up and runs) busy-waits 1 ms, correction on, no OS
// jitter thread. candor's examples/hiccup runs the same workload. Usage:
//   java -cp <jlbh classpath>:<dir of this class> JlbhHiccup [iterations] [runs]
//   java ... JlbhHiccup cost [iterations] [runs]
// `cost` measures what one queued iteration costs JLBH itself: every iteration is already late
// (throughput Integer.MAX_VALUE), the task only records its end, and each run's
// "Run time" / iterations is the catch-up cost (examples/hiccup --catch-up-cost is candor's).
//   java ... JlbhHiccup stalls [iterations] [runs]
// `stalls` runs the hiccup workload and also watches for the thread losing the CPU between
// iterations: a gap of over 1 ms between one iteration's end and the next one's start (outside
// the hiccups' catch-up), and how much of it JLBH put into the next iteration's end-to-end time.

import net.openhft.chronicle.jlbh.JLBH;
import net.openhft.chronicle.jlbh.JLBHOptions;
import net.openhft.chronicle.jlbh.JLBHTask;

public class JlbhHiccup implements JLBHTask {
    static final long HICCUP_EVERY = 10_000;
    static final long HICCUP_NS = 1_000_000;

    private JLBH jlbh;
    private long count;

    private final boolean hiccups;
    private boolean watchStalls;
    private long lastEnd, stalls, stallsCounted, worstStall, worstStallCounted;

    JlbhHiccup(boolean hiccups) {
        this.hiccups = hiccups;
    }

    public static void main(String[] args) {
        boolean cost = args.length > 0 && args[0].equals("cost");
        boolean watch = args.length > 0 && args[0].equals("stalls");
        int a = cost || watch ? 1 : 0;
        int iterations = args.length > a ? Integer.parseInt(args[a]) : 400_000;
        int runs = args.length > a + 1 ? Integer.parseInt(args[a + 1]) : 3;
        if (cost) {
            new JLBH(new JLBHOptions()
                    .warmUpIterations(1_000_000)
                    .iterations(iterations)
                    .throughput(Integer.MAX_VALUE)
                    .runs(runs)
                    .recordOSJitter(false)
                    .accountForCoordinatedOmission(true)
                    .jlbhTask(new JlbhHiccup(false))).start();
            return;
        }
        JlbhHiccup task = new JlbhHiccup(true);
        task.watchStalls = watch;
        JLBHOptions options = new JLBHOptions()
                .warmUpIterations(40_000)
                .iterations(iterations)
                .throughput(100_000)
                .runs(runs)
                .recordOSJitter(false)
                .accountForCoordinatedOmission(true)
                .jlbhTask(task);
        new JLBH(options).start();
        if (watch) {
            System.out.printf("stalls between iterations > 1 ms: %d; in the next end-to-end time " +
                    "(>= half the gap): %d; longest %d us, of which in the end-to-end time %d us%n",
                    task.stalls, task.stallsCounted, task.worstStall / 1000, task.worstStallCounted / 1000);
        }
    }

    @Override
    public void init(JLBH jlbh) {
        this.jlbh = jlbh;
    }

    @Override
    public void run(long startTimeNs) {
        if (watchStalls) {
            long entry = System.nanoTime();
            long gap = entry - lastEnd;
            // Past the warm-up, not the iteration after a hiccup, not a run's first iteration.
            if (count > 40_000 && count % HICCUP_EVERY != 1 && gap > 1_000_000 && gap < 1_000_000_000L) {
                stalls++;
                if (entry - startTimeNs >= gap / 2) stallsCounted++;
                if (gap > worstStall) {
                    worstStall = gap;
                    worstStallCounted = entry - startTimeNs;
                }
            }
        }
        if (hiccups && count % HICCUP_EVERY == 0) {
            long until = System.nanoTime() + HICCUP_NS;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
        }
        count++;
        long end = System.nanoTime();
        lastEnd = end;
        jlbh.sample(end - startTimeNs);
    }
}
