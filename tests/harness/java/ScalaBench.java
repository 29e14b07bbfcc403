// The legacy Scala high-level consumer timed the way scripts/bench reads zkconsumer: from its first message.
//
// Usage: java -cp <kafka jars>:<classes> ScalaBench --props FILE --topic TOPIC --out FILE
//            (--count N | --record)
//
// One stream. Once createMessageStreams returned, stdout gets "READY".
//   --count N   reads N messages touching each value; --out gets "<messages> <seconds>" timed from the
//               first message to the Nth (the JVM's start and the first rebalance are not counted).
//   --record    keeps "<partition> <offset> <clock>" of every message in memory (<clock>: System.nanoTime,
//               CLOCK_MONOTONIC on Linux, as Python's time.monotonic_ns) and writes them to --out on SIGTERM.
import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.KafkaStream;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

public final class ScalaBench {
    private static final int CAPACITY = 4_000_000;
    private static final int[] partitions = new int[CAPACITY];
    private static final long[] offsets = new long[CAPACITY];
    private static final long[] clocks = new long[CAPACITY];
    private static volatile int recorded = 0;

    public static void main(String[] args) throws Exception {
        String propsFile = null, topic = null, outFile = null;
        long count = -1;
        boolean record = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--props": propsFile = args[++i]; break;
                case "--topic": topic = args[++i]; break;
                case "--out": outFile = args[++i]; break;
                case "--count": count = Long.parseLong(args[++i]); break;
                case "--record": record = true; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(propsFile)) {
            props.load(in);
        }
        ConsumerConnector connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(props));
        Map<String, List<KafkaStream<byte[], byte[]>>> streams =
            connector.createMessageStreams(Collections.singletonMap(topic, 1));
        ConsumerIterator<byte[], byte[]> it = streams.get(topic).get(0).iterator();
        final String out = outFile;
        if (record) {
            CountDownLatch written = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    dump(out);
                } catch (IOException e) {
                    e.printStackTrace();
                }
                written.countDown();
            }, "scala-bench-dump"));
            System.out.println("READY");
            System.out.flush();
            while (it.hasNext()) {
                MessageAndMetadata<byte[], byte[]> m = it.next();
                long now = System.nanoTime();
                byte[] value = m.message();
                int n = recorded;
                if (n < CAPACITY && value != null) {
                    partitions[n] = m.partition();
                    offsets[n] = m.offset();
                    clocks[n] = now;
                    recorded = n + 1;
                }
            }
            return;
        }
        System.out.println("READY");
        System.out.flush();
        long seen = 0, bytes = 0, first = 0;
        while (seen < count && it.hasNext()) {
            byte[] value = it.next().message();
            if (seen == 0) {
                first = System.nanoTime();
            }
            bytes += value == null ? 0 : value.length;
            seen++;
        }
        long last = System.nanoTime();
        try (BufferedWriter w = new BufferedWriter(new FileWriter(out))) {
            w.write(seen + " " + ((last - first) / 1e9) + " " + bytes + "\n");
        }
        connector.shutdown();
        System.out.println("DONE");
        System.out.flush();
    }

    private static void dump(String out) throws IOException {
        int n = recorded;
        try (BufferedWriter w = new BufferedWriter(new FileWriter(out), 1 << 20)) {
            for (int i = 0; i < n; i++) {
                w.write(partitions[i] + " " + offsets[i] + " " + clocks[i] + "\n");
            }
        }
    }
}
