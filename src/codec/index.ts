export { decodeJson, encodeJson } from './json.js';
