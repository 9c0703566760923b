// Test oracle: MirrorMaker 2's own classes read the records of MM2 topic segments.
//
//   java -cp '<kafka lib>/*' MirrorRecords.java KIND SEGMENT [KIND SEGMENT ...]
//
// KIND is offset-syncs, checkpoints, heartbeats or connect-offsets. Kafka's FileRecords walks
// the segment; offset syncs, checkpoints and heartbeats are decoded by MirrorMaker 2's
// OffsetSync/Checkpoint/Heartbeat classes (deserializeRecord, or the key schema alone for a
// tombstone), Connect offsets by Connect's JsonConverter (schemas.enable=false, as Connect's
// offset store reads them), with MirrorUtils' key names. One JSON object per record on
// stdout. Kafka 4.x moved FileRecords and Record to org.apache.kafka.common.record.internal: the
// test rewrites those two imports for such a release before running the file.

import java.io.File;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.MirrorUtils;
import org.apache.kafka.connect.mirror.OffsetSync;

public class MirrorRecords {

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonConverter keys = new JsonConverter();
        keys.configure(Map.of("schemas.enable", "false"), true);
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", "false"), false);
        for (int a = 0; a + 1 < args.length; a += 2) {
            String kind = args[a];
            File file = new File(args[a + 1]);
            try (FileRecords records = FileRecords.open(file)) {
                for (var batch : records.batches()) {
                    if (batch.isControlBatch()) {
                        continue;
                    }
                    for (Record r : batch) {
                        byte[] key = bytes(r.key());
                        byte[] value = bytes(r.value());
                        Map<String, Object> out = new LinkedHashMap<>();
                        out.put("path", file.getPath());
                        out.put("position", batch.position());
                        out.put("offset", r.offset());
                        out.put("timestamp", r.timestamp());
                        out.put("deleted", value == null);
                        ConsumerRecord<byte[], byte[]> cr = new ConsumerRecord<>("t", 0, r.offset(), key, value);
                        switch (kind) {
                            case "offset-syncs": {
                                if (value == null) {
                                    Struct k = OffsetSync.KEY_SCHEMA.read(ByteBuffer.wrap(key));
                                    out.put("topic", k.getString("topic"));
                                    out.put("partition", k.getInt("partition"));
                                } else {
                                    OffsetSync s = OffsetSync.deserializeRecord(cr);
                                    out.put("topic", s.topicPartition().topic());
                                    out.put("partition", s.topicPartition().partition());
                                    out.put("upstreamOffset", s.upstreamOffset());
                                    out.put("downstreamOffset", s.downstreamOffset());
                                }
                                break;
                            }
                            case "checkpoints": {
                                if (value == null) {
                                    Struct k = Checkpoint.KEY_SCHEMA.read(ByteBuffer.wrap(key));
                                    out.put("group", k.getString("group"));
                                    out.put("topic", k.getString("topic"));
                                    out.put("partition", k.getInt("partition"));
                                } else {
                                    Checkpoint c = Checkpoint.deserializeRecord(cr);
                                    out.put("group", c.consumerGroupId());
                                    out.put("topic", c.topicPartition().topic());
                                    out.put("partition", c.topicPartition().partition());
                                    out.put("upstreamOffset", c.upstreamOffset());
                                    out.put("downstreamOffset", c.downstreamOffset());
                                    out.put("metadata", c.metadata());
                                    out.put("version", ByteBuffer.wrap(value).getShort());
                                }
                                break;
                            }
                            case "heartbeats": {
                                if (value == null) {
                                    Struct k = Heartbeat.KEY_SCHEMA.read(ByteBuffer.wrap(key));
                                    out.put("sourceClusterAlias", k.getString("sourceClusterAlias"));
                                    out.put("targetClusterAlias", k.getString("targetClusterAlias"));
                                } else {
                                    Heartbeat h = Heartbeat.deserializeRecord(cr);
                                    out.put("sourceClusterAlias", h.sourceClusterAlias());
                                    out.put("targetClusterAlias", h.targetClusterAlias());
                                    out.put("heartbeatTimestamp", h.timestamp());
                                    out.put("version", ByteBuffer.wrap(value).getShort());
                                }
                                break;
                            }
                            case "connect-offsets": {
                                List<?> k = (List<?>) keys.toConnectData("t", key).value();
                                out.put("connector", k.get(0));
                                @SuppressWarnings("unchecked")
                                Map<String, Object> partition = new HashMap<>((Map<String, Object>) k.get(1));
                                out.put("sourcePartition", partition);
                                // Connect's JsonConverter gives integers as Long; MM2 keys them as
                                // cluster/topic/partition (MirrorUtils.wrapPartition)
                                if (partition.containsKey(MirrorUtils.SOURCE_CLUSTER_KEY)) {
                                    out.put("cluster", partition.get(MirrorUtils.SOURCE_CLUSTER_KEY));
                                    out.put("topic", partition.get(MirrorUtils.TOPIC_KEY));
                                    out.put("partition", ((Number) partition.get(MirrorUtils.PARTITION_KEY)).intValue());
                                }
                                out.put("sourceOffset", value == null ? null : values.toConnectData("t", value).value());
                                break;
                            }
                            default:
                                throw new IllegalArgumentException("unknown kind " + kind);
                        }
                        System.out.println(json.writeValueAsString(out));
                    }
                }
            }
        }
    }

    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }
}
