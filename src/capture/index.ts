export { changeOf, envelopeOf, jsonForm, orderingKeyOf, pkOf, rowImage } from './envelope.js';
export { installCapture } from './install.js';
export { writeChanges } from './write.js';
