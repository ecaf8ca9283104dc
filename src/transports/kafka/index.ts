export type { KafkaClient, KafkaOptions, KafkaProducer, KafkaRecord } from './kafka.js';
export { kafka, PERMANENT_KAFKA_ERRORS } from './kafka.js';
