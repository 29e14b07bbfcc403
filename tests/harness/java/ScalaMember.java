// One real legacy Scala high-level consumer (Kafka 1.1.1) as a group member for interop tests.
//
// Usage: java -cp <kafka11 jars>:<classes> ScalaMember --props FILE --out FILE
//            (--topic TOPIC=STREAMS)... | (--whitelist REGEX | --blacklist REGEX) --streams N
//
// The properties file must set zookeeper.connect, group.id and consumer.id (so the harness knows
// the consumer id). Every message becomes a flushed line "<topic> <partition> <offset>" in --out;
// with --timed, "<clock> <topic> <partition> <offset> <value>" as zkconsumer's chaos members write
// it (<clock>: System.nanoTime in seconds, which on Linux is CLOCK_MONOTONIC like theirs).
// Once the streams exist, stdout gets "READY <consumerId>". SIGTERM runs connector.shutdown()
// (which commits) from a shutdown hook; stdout then gets "STOPPED".
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import kafka.consumer.Blacklist;
import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.ConsumerTimeoutException;
import kafka.consumer.KafkaStream;
import kafka.consumer.TopicFilter;
import kafka.consumer.Whitelist;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

public final class ScalaMember {
    // Guards next() + the write: once `stopping` is set no thread takes another message, so the
    // offsets shutdown() commits cover exactly the lines written (no loss, no phantom delivery).
    private static final Object LOCK = new Object();
    private static volatile boolean stopping = false;
    private static boolean timed = false;

    public static void main(String[] args) throws Exception {
        String propsFile = null, outFile = null, regex = null;
        boolean black = false;
        int streams = 1;
        Map<String, Integer> topics = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("--timed")) {
                timed = true;
                i -= 1;
                continue;
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--props": propsFile = value; break;
                case "--out": outFile = value; break;
                case "--topic": {
                    int eq = value.lastIndexOf('=');
                    topics.put(value.substring(0, eq), Integer.parseInt(value.substring(eq + 1)));
                    break;
                }
                case "--whitelist": regex = value; black = false; break;
                case "--blacklist": regex = value; black = true; break;
                case "--streams": streams = Integer.parseInt(value); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(propsFile)) {
            props.load(in);
        }
        String consumerId = props.getProperty("group.id") + "_" + props.getProperty("consumer.id");
        OutputStream out = new FileOutputStream(outFile, true);
        ConsumerConnector connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(props));

        List<KafkaStream<byte[], byte[]>> all = new ArrayList<>();
        if (regex != null) {
            TopicFilter filter = black ? new Blacklist(regex) : new Whitelist(regex);
            all.addAll(connector.createMessageStreamsByFilter(filter, streams));
        } else {
            for (List<KafkaStream<byte[], byte[]>> perTopic : connector.createMessageStreams(topics).values()) {
                all.addAll(perTopic);
            }
        }
        List<Thread> workers = new ArrayList<>();
        for (KafkaStream<byte[], byte[]> stream : all) {
            Thread t = new Thread(() -> drain(stream, out), consumerId + "-drain-" + workers.size());
            t.start();
            workers.add(t);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (LOCK) {
                stopping = true;
            }
            connector.shutdown();  // stops fetchers, commits consumed offsets, closes ZooKeeper
            // No join: a wildcard stream whose filter matched no topic never gets the shutdown
            // sentinel, so its thread would block forever; the JVM halts after the hooks anyway.
            synchronized (LOCK) {
                try {
                    out.close();
                } catch (IOException ignored) {
                }
            }
            System.out.println("STOPPED " + consumerId);
            System.out.flush();
        }, "scala-member-shutdown"));
        System.out.println("READY " + consumerId);
        System.out.flush();
        for (Thread t : workers) {
            t.join();
        }
    }

    private static void drain(KafkaStream<byte[], byte[]> stream, OutputStream out) {
        ConsumerIterator<byte[], byte[]> it = stream.iterator();
        while (true) {
            try {
                while (it.hasNext()) {
                    synchronized (LOCK) {
                        if (stopping) {
                            return;
                        }
                        MessageAndMetadata<byte[], byte[]> m = it.next();
                        String line = m.topic() + " " + m.partition() + " " + m.offset() + "\n";
                        if (timed) {
                            byte[] raw = m.message();
                            String value = raw == null || raw.length == 0 ? "-"
                                : new String(raw, StandardCharsets.UTF_8).replace(' ', '_').replace('\n', '_');
                            line = String.format(Locale.ROOT, "%.6f %s %d %d %s\n", System.nanoTime() / 1e9,
                                                 m.topic(), m.partition(), m.offset(), value);
                        }
                        out.write(line.getBytes(StandardCharsets.UTF_8));
                        out.flush();
                    }
                }
                return;  // the shutdown sentinel ended the stream
            } catch (ConsumerTimeoutException e) {
                // consumer.timeout.ms >= 0: keep waiting (the iterator stays usable)
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
    }
}
