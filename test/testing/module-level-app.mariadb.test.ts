import { DIALECTS } from '../support/dialects.js';
import { moduleLevelAppSuite } from './support/module-level-app.js';

moduleLevelAppSuite(DIALECTS.find((d) => d.name === 'mariadb')!);
