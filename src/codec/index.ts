export { decodeEvent } from './decode-event.js';
export { decodeJson, type EncodedJson, encodeJson, encodeJsonValue } from './json.js';
export {
  CODEC_HEADER,
  codecNamed,
  jsonCodec,
  type PayloadCodec,
  superjsonCodec,
} from './payload-codec.js';
