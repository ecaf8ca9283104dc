export { buildCatalogue, catalogueReceiver } from './build-catalogue.js';
export type {
  Catalogue,
  CatalogueEvent,
  CatalogueEventColumn,
  CatalogueField,
  CatalogueReceiver,
} from './catalogue-types.js';
export { CATALOGUE_FORMAT } from './catalogue-types.js';
export { listensFor, whatListensTo } from './listeners.js';
export { compareText, payloadFields, payloadJsonSchema, spellType } from './payload-schema.js';
