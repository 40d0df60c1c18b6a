import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the tests need of Kafka's own Java client that @platformatic/kafka lacks, run by the JDK's
 * source launcher with the broker's jars (java -cp '<lib>/*' KafkaTool.java <bootstrap> ...):
 *
 *   transactions <topic> <partition> commit:0-99 abort:100-149 ...
 *     each argument one transaction of messages {"id":i,"name":"n<i>"}, committed or aborted;
 *     every transaction is flushed to the log before it ends, so aborted records really are in
 *     the partition (marked aborted), as a consumer must skip them.
 *   add-partitions <topic> <count>
 *     grows the topic to <count> partitions.
 */
public class KafkaTool {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    switch (args[1]) {
      case "transactions" -> transactions(bootstrap, args);
      case "add-partitions" -> addPartitions(bootstrap, args[2], Integer.parseInt(args[3]));
      default -> throw new IllegalArgumentException("unknown command " + args[1]);
    }
  }

  static void transactions(String bootstrap, String[] args) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("transactional.id", "sluice-test-" + System.nanoTime());
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    String topic = args[2];
    int partition = Integer.parseInt(args[3]);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      producer.initTransactions();
      for (int t = 4; t < args.length; t++) {
        String[] spec = args[t].split(":");
        String[] range = spec[1].split("-");
        producer.beginTransaction();
        for (int i = Integer.parseInt(range[0]); i <= Integer.parseInt(range[1]); i++) {
          String value = "{\"id\":" + i + ",\"name\":\"n" + i + "\"}";
          producer.send(new ProducerRecord<>(topic, partition, null, value));
        }
        producer.flush();
        if (spec[0].equals("commit")) producer.commitTransaction();
        else producer.abortTransaction();
      }
    }
  }

  static void addPartitions(String bootstrap, String topic, int count) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(count))).all().get();
    }
  }
}
