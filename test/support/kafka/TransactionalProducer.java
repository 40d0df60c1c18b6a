import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java producer writing transactions, for the tests (@platformatic/kafka has no
 * transactional producer). Run by the JDK's source launcher with the broker's jars:
 *   java -cp '<lib>/*' TransactionalProducer.java <bootstrap> <topic> <partition> commit:0-99 abort:100-149 ...
 * Each argument after the partition is one transaction of messages {"id":i,"name":"n<i>"}, committed
 * or aborted; every transaction is flushed to the log before it ends, so aborted records really
 * are in the partition (marked aborted), as a consumer must skip them.
 */
public class TransactionalProducer {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    props.put("transactional.id", "sluice-test-" + System.nanoTime());
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    String topic = args[1];
    int partition = Integer.parseInt(args[2]);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      producer.initTransactions();
      for (int t = 3; t < args.length; t++) {
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
}
