import avro from 'avsc';

/**
 * A whole Avro container file of the records, as avsc (an Avro implementation apart from Sluice's)
 * writes one: its blocks compressed by `codec`, none unless given.
 */
export function avroContainer(
  schema: object,
  records: object[],
  codec?: 'null' | 'deflate',
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const encoder = new avro.streams.BlockEncoder(avro.Type.forSchema(schema as avro.Schema), { codec });
    const chunks: Buffer[] = [];
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    encoder.on('end', () => resolve(Buffer.concat(chunks)));
    encoder.on('error', reject);
    for (const record of records) encoder.write(record);
    encoder.end();
  });
}
