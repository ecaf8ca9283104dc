export { decodeEvent } from './decode-event.js';
export { decodeJson, type EncodedJson, encodeJson, encodeJsonValue } from './json.js';
export {
  BUILTIN_CODECS,
  CODEC_HEADER,
  codecNamed,
  type JsonSchemaObject,
  jsonCodec,
  type PayloadCodec,
  superjsonCodec,
} from './payload-codec.js';
