// Small Kafka client for the peer's scenarios: producers at a known rate (with a codec and
// record headers) and consumers that commit at a known pace. Only the public kafka-clients
// API is used, so the same source compiles against Kafka 3.9 and 4.x.
//
//   produce  BOOTSTRAP SECONDS RATE TOPIC:CODEC[:headers] ...   (RATE records/s per topic)
//   consume  BOOTSTRAP GROUP TOPIC[,TOPIC] SECONDS RATE          (RATE 0 = as fast as possible)
//            (SECONDS of reading from the group's first assignment: joining takes seconds on a
//            loaded machine; a consumer never assigned gives up JOIN_LIMIT_MS after SECONDS)
//   assign   BOOTSTRAP GROUP TOPIC[,TOPIC] SECONDS RATE          (as consume, but every partition of
//            the topics assigned by the client itself, as Flink and Spark do: its commits carry
//            no generation and the group never has a member)
//            (either takes an optional last argument ISOLATION: read_committed or
//            read_uncommitted, the default)
//   txn      BOOTSTRAP TOPIC TRANSACTIONAL_ID TRANSACTIONS RECORDS PAUSE_MS GROUP
//            (transactions of RECORDS records each, every third one aborted; each also
//            commits an offset of GROUP through the transaction, then PAUSE_MS of rest)
//   txn-open BOOTSTRAP TOPIC TRANSACTIONAL_ID RECORDS TIMEOUT_MS
//            (one transaction of RECORDS records on every partition of TOPIC, with
//            transaction.timeout.ms TIMEOUT_MS, left open: prints "open" and waits to be killed)
//   acked    BOOTSTRAP TOPIC RECORDS ACKS LABEL
//            (RECORDS records keyed and valued "LABEL-i" at 500 records/s with ACKS, idempotence
//            off; the producer's callback log: one JSON line per record as its send completes,
//            {"id", "partition", "offset", "timestamp"} when acknowledged, {"id", "error"} when not)
//   offsets  BOOTSTRAP TOPIC SECONDS INTERVAL_MS
//            (every INTERVAL_MS, ListOffsets latest of each partition with isolation
//            read_committed (the last stable offset) and read_uncommitted (the log end): one
//            JSON line per partition and sample; a failed sample is skipped)
//
// Each mode prints one summary line on stdout when done.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import java.nio.charset.StandardCharsets;

public class PeerClient {

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: produce|consume|assign|txn|txn-open|offsets|acked ...");
        }
        switch (args[0]) {
            case "produce":
                produce(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                        Arrays.copyOfRange(args, 4, args.length));
                break;
            case "consume":
            case "assign":
                consume(args[1], args[2], Arrays.asList(args[3].split(",")),
                        Integer.parseInt(args[4]), Integer.parseInt(args[5]), args[0].equals("assign"),
                        args.length > 6 ? args[6] : "read_uncommitted");
                break;
            case "txn-open":
                txnOpen(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
                break;
            case "offsets":
                offsets(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                break;
            case "acked":
                acked(args[1], args[2], Integer.parseInt(args[3]), args[4], args[5]);
                break;
            case "txn":
                txn(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                        Integer.parseInt(args[6]), args[7]);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void produce(String bootstrap, int seconds, int rate, String[] specs) throws Exception {
        List<String> topics = new ArrayList<>();
        List<KafkaProducer<String, String>> producers = new ArrayList<>();
        List<Boolean> withHeaders = new ArrayList<>();
        for (String spec : specs) {
            String[] parts = spec.split(":");
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("acks", "all");
            p.put("linger.ms", "50");
            p.put("compression.type", parts[1]);
            p.put("client.id", "peer-producer-" + parts[0]);
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            topics.add(parts[0]);
            producers.add(new KafkaProducer<>(p));
            withHeaders.add(parts.length > 2 && parts[2].equals("headers"));
        }
        long start = System.currentTimeMillis();
        long total = (long) seconds * rate;
        long sent = 0;
        for (long i = 0; i < total; i++) {
            long due = start + (i * 1000L) / rate;
            long wait = due - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait);
            }
            for (int t = 0; t < topics.size(); t++) {
                String value = "{\"seq\":" + i + ",\"topic\":\"" + topics.get(t)
                        + "\",\"ts\":" + System.currentTimeMillis()
                        + ",\"pad\":\"" + "x".repeat(60) + "\"}";
                ProducerRecord<String, String> rec =
                        new ProducerRecord<>(topics.get(t), "key-" + (i % 16), value);
                if (withHeaders.get(t)) {
                    rec.headers().add("trace-id", ("t" + i).getBytes(StandardCharsets.UTF_8));
                    rec.headers().add("source", "peer".getBytes(StandardCharsets.UTF_8));
                }
                producers.get(t).send(rec);
                sent++;
            }
        }
        for (KafkaProducer<String, String> p : producers) {
            p.flush();
            p.close(Duration.ofSeconds(10));
        }
        System.out.println("produced " + sent + " records in "
                + (System.currentTimeMillis() - start) + " ms");
    }

    static void acked(String bootstrap, String topic, int records, String acks, String label) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", acks);
        p.put("enable.idempotence", "false");
        p.put("linger.ms", "5");
        p.put("client.id", "peer-acked-" + label);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        long start = System.currentTimeMillis();
        final long[] done = {0L, 0L};
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                long wait = start + (i * 1000L) / 500 - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
                final String id = label + "-" + i;
                producer.send(new ProducerRecord<>(topic, id, id + "," + "x".repeat(80)), (md, e) -> {
                    synchronized (done) {
                        if (e == null) {
                            done[0]++;
                            System.out.println("{\"id\":\"" + id + "\",\"partition\":" + md.partition()
                                    + ",\"offset\":" + md.offset() + ",\"timestamp\":" + md.timestamp() + "}");
                        } else {
                            done[1]++;
                            System.out.println("{\"id\":\"" + id + "\",\"error\":\""
                                    + e.getClass().getSimpleName() + "\"}");
                        }
                    }
                });
            }
            producer.flush();
        }
        synchronized (done) {
            System.out.println("acked " + done[0] + " of " + records + " records, " + done[1] + " failed, in "
                    + (System.currentTimeMillis() - start) + " ms");
        }
    }

    /** How long a consumer that never gets an assignment keeps trying after its SECONDS. */
    static final long JOIN_LIMIT_MS = 120_000L;

    static void consume(String bootstrap, String group, List<String> topics, int seconds, int rate,
                        boolean assign, String isolation) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("isolation.level", isolation);
        p.put("client.id", "peer-consumer-" + group);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("max.poll.records", rate > 0 ? String.valueOf(Math.max(1, rate / 5)) : "500");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        long start = System.currentTimeMillis();
        final long[] assignedAt = {0L};
        long consumed = 0;
        long lastCommit = start;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            if (assign) {
                List<TopicPartition> owned = new ArrayList<>();
                for (String topic : topics) {
                    for (PartitionInfo info : consumer.partitionsFor(topic)) {
                        owned.add(new TopicPartition(topic, info.partition()));
                    }
                }
                consumer.assign(owned);
                assignedAt[0] = System.currentTimeMillis();
            } else {
                consumer.subscribe(topics, new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        if (assignedAt[0] == 0L) {
                            assignedAt[0] = System.currentTimeMillis();
                        }
                    }
                });
            }
            while (true) {
                long end = assignedAt[0] > 0L ? assignedAt[0] + seconds * 1000L
                                              : start + seconds * 1000L + JOIN_LIMIT_MS;
                if (System.currentTimeMillis() >= end) {
                    break;
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    consumed++;
                    if (rate > 0) {
                        long due = assignedAt[0] + (consumed * 1000L) / rate;
                        long wait = due - System.currentTimeMillis();
                        if (wait > 0) {
                            Thread.sleep(wait);
                        }
                    }
                }
                if (System.currentTimeMillis() - lastCommit >= 1000) {
                    consumer.commitSync();
                    lastCommit = System.currentTimeMillis();
                }
            }
            consumer.commitSync();
        }
        System.out.println("group " + group + " consumed " + consumed + " records in "
                + (System.currentTimeMillis() - start) + " ms"
                + (assignedAt[0] > 0L ? ", reading from its first assignment " + (assignedAt[0] - start) + " ms in"
                                      : ", never assigned a partition"));
    }

    /** Settings of a transactional producer with id {@code transactionalId}. */
    static Properties transactional(String bootstrap, String transactionalId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", transactionalId);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("client.id", "peer-txn-" + transactionalId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    static void txn(String bootstrap, String topic, String transactionalId, int transactions, int records,
                    int pauseMs, String group) throws Exception {
        Properties p = transactional(bootstrap, transactionalId);
        long start = System.currentTimeMillis();
        int committed = 0;
        int aborted = 0;
        long offset = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (int t = 0; t < transactions; t++) {
                producer.beginTransaction();
                for (int i = 0; i < records; i++) {
                    String value = "{\"txn\":" + t + ",\"seq\":" + i + ",\"ts\":" + System.currentTimeMillis() + "}";
                    producer.send(new ProducerRecord<>(topic, i % 2, "order-" + t + "-" + i, value));
                }
                offset += records;
                // the records reach the broker before the transaction ends, so an abort, too,
                // writes its markers into both partitions (unsent records would just be dropped)
                producer.flush();
                producer.sendOffsetsToTransaction(
                        Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(offset, "txn " + t)),
                        new ConsumerGroupMetadata(group));
                if (t % 3 == 2) {
                    producer.abortTransaction();
                    aborted++;
                } else {
                    producer.commitTransaction();
                    committed++;
                }
                Thread.sleep(pauseMs);
            }
        }
        System.out.println("transactions committed " + committed + " aborted " + aborted + " in "
                + (System.currentTimeMillis() - start) + " ms");
    }

    static void txnOpen(String bootstrap, String topic, String transactionalId, int records, int timeoutMs)
            throws Exception {
        Properties p = transactional(bootstrap, transactionalId);
        p.put("transaction.timeout.ms", String.valueOf(timeoutMs));
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        producer.beginTransaction();
        int partitions = producer.partitionsFor(topic).size();
        for (int part = 0; part < partitions; part++) {
            for (int i = 0; i < records; i++) {
                String value = "{\"open\":true,\"seq\":" + i + ",\"ts\":" + System.currentTimeMillis() + "}";
                producer.send(new ProducerRecord<>(topic, part, "open-" + i, value));
            }
        }
        producer.flush();  // every record is on the broker: the transaction is open on each partition
        System.out.println("open " + partitions * records + " records on " + partitions + " partitions");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000L);  // held open until the scenario kills this process
        }
    }

    static void offsets(String bootstrap, String topic, int seconds, int intervalMs) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "peer-offsets-" + topic);
        p.put("default.api.timeout.ms", "3000");
        p.put("request.timeout.ms", "2000");
        long end = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = Admin.create(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            while (parts.isEmpty() && System.currentTimeMillis() < end) {
                try {
                    admin.describeTopics(List.of(topic)).allTopicNames().get(3, TimeUnit.SECONDS).get(topic)
                        .partitions().forEach(info -> parts.add(new TopicPartition(topic, info.partition())));
                } catch (Exception e) {
                    Thread.sleep(intervalMs);
                }
            }
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : parts) {
                latest.put(tp, OffsetSpec.latest());
            }
            while (System.currentTimeMillis() < end) {
                long t = System.currentTimeMillis();
                try {
                    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> stable = admin.listOffsets(
                        latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get(3, TimeUnit.SECONDS);
                    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> logEnd = admin.listOffsets(
                        latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get(3, TimeUnit.SECONDS);
                    long done = System.currentTimeMillis();
                    for (TopicPartition tp : parts) {
                        System.out.println("{\"t_ms\":" + t + ",\"t_end_ms\":" + done + ",\"topic\":\"" + topic
                            + "\",\"partition\":" + tp.partition() + ",\"last_stable_offset\":"
                            + stable.get(tp).offset() + ",\"log_end_offset\":" + logEnd.get(tp).offset() + "}");
                    }
                    System.out.flush();
                } catch (Exception e) {
                    // a broker restarting: this sample is skipped
                }
                long wait = t + intervalMs - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
            }
        }
    }
}
