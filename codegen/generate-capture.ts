/**
 * The parts of the generated file that change capture adds: a row type per captured model
 * (its attributes from `Attributes<Model>`, in their JSON form), the envelope's payload
 * type per captured topic, and `installCapture(outbox)`, which wires exactly the models
 * the file was generated for.
 *
 * Why typed from the model's own TypeScript type rather than from its DataTypes alone: the
 * model's interface is what the app already reads (`status: 'placed' | 'paid'`), and a
 * DataType says less (`STRING`). The DataType decides where the envelope's JSON form is
 * not the model's type: DECIMAL and BIGINT are text whatever the model says, and an
 * attribute the model's type does not declare (the timestamps Sequelize adds) is typed
 * from its DataType.
 */
import {
  type ImportDeclarationStructure,
  type InterfaceDeclarationStructure,
  type StatementStructures,
  StructureKind,
  VariableDeclarationKind,
  type WriterFunction,
} from 'ts-morph';
import type { ResolvedCapture } from '../src/declare/capture.js';
import type { OutboxConfig } from '../src/declare/define-outbox.js';
import { capturedTopics, imagesOf } from '../src/introspect/capture-schema.js';
import { rowTypeName } from './names.js';
import { propertyName, quote } from './payload-type.js';

/** Where the generated file imports a captured model's instance type from. */
export interface CaptureModelImport {
  /** The import specifier, relative to the generated file (`../examples/shop/models.js`). */
  readonly specifier: string;
  /** The exported name of the model's instance type (`Order`). */
  readonly name: string;
}

/** What capture adds to the generated file. */
export interface CaptureParts {
  /** Type-only imports of the models' instance types. */
  readonly imports: ImportDeclarationStructure[];
  /** A row interface per captured model. */
  readonly rows: StatementStructures[];
  /** Whether a topic is a captured one. */
  captured(topic: string): boolean;
  /** The payload interface of a captured topic, or undefined for one not captured. */
  payload(topic: string, typeName: string, docs: string[]): StatementStructures | undefined;
  /** `capturedModels` and `installCapture(outbox)`; empty without captures. */
  readonly install: StatementStructures[];
  /** Names the file imports from outboxkit as types (`CapturedAttribute`). */
  readonly runtimeTypes: readonly string[];
  /** Names the file imports from outboxkit as values (`installCapture`, `ConfigurationError`). */
  readonly runtimeValues: readonly string[];
}

interface AttributeDefinition {
  readonly type?: { key?: string; values?: readonly string[]; type?: unknown };
  readonly allowNull?: boolean;
  readonly primaryKey?: boolean;
  readonly values?: readonly string[];
}

/** The DataTypes whose JSON form is text whatever the model's TypeScript type says. */
const TEXT_FORM = new Set(['DECIMAL', 'BIGINT']);

/** A DataType's JSON form as TypeScript (never null; see {@link attributeText}). */
export function dataTypeText(
  type: AttributeDefinition['type'],
  values?: readonly string[],
): string {
  switch (type?.key) {
    case 'INTEGER':
    case 'SMALLINT':
    case 'MEDIUMINT':
    case 'TINYINT':
      return 'number';
    case 'FLOAT':
    case 'DOUBLE':
    case 'REAL':
      return "number | 'NaN' | 'Infinity' | '-Infinity'";
    case 'BOOLEAN':
      return 'boolean';
    case 'ENUM': {
      const list = type.values ?? values;
      return list?.length ? list.map(quote).join(' | ') : 'string';
    }
    case 'ARRAY': {
      const inner = dataTypeText(type.type as AttributeDefinition['type']);
      return inner.includes(' ') ? `(${inner})[]` : `${inner}[]`;
    }
    case 'RANGE':
      return 'unknown[]';
    case 'HSTORE':
      return 'Record<string, string>';
    case 'STRING':
    case 'TEXT':
    case 'CHAR':
    case 'CITEXT':
    case 'UUID':
    case 'DATE':
    case 'DATEONLY':
    case 'TIME':
    case 'BLOB':
    case 'DECIMAL':
    case 'BIGINT':
    case 'INET':
    case 'CIDR':
    case 'MACADDR':
    case 'TSVECTOR':
      return 'string';
    default:
      return 'unknown';
  }
}

function nullable(attribute: AttributeDefinition | undefined): boolean {
  return attribute?.allowNull !== false && attribute?.primaryKey !== true;
}

/** An attribute's DataType form, `| null` where the model allows null. */
function dataTypeForm(attribute: AttributeDefinition | undefined, forKey = false): string {
  const text = dataTypeText(attribute?.type, attribute?.values);
  return !forKey && nullable(attribute) && text !== 'unknown' ? `${text} | null` : text;
}

/**
 * The type of one captured attribute: `CapturedAttribute<Model, 'name', fallback>` when
 * the model's type is known, its DataType form otherwise, and for DECIMAL/BIGINT always.
 */
function attributeText(
  field: string,
  attribute: AttributeDefinition | undefined,
  model: string | undefined,
  forKey = false,
): string {
  const fallback = dataTypeForm(attribute, forKey);
  if (!model || TEXT_FORM.has(attribute?.type?.key ?? '')) return fallback;
  return `CapturedAttribute<${model}, ${quote(field)}, ${fallback}>`;
}

function attributesOf(capture: ResolvedCapture): Record<string, AttributeDefinition> {
  return (capture.model.getAttributes?.() ?? {}) as Record<string, AttributeDefinition>;
}

/** Build what capture adds to the generated file of `config`. */
export function captureParts(
  config: OutboxConfig,
  models: ReadonlyMap<string, CaptureModelImport>,
  from?: ExampleImports,
): CaptureParts {
  const captures = config.captures ?? [];
  const imports: ImportDeclarationStructure[] = [];
  const rows: StatementStructures[] = [];
  const aliases = new Map<string, string>();
  const usedAliases = new Set<string>();
  let usesAttribute = false;

  for (const capture of captures) {
    const found = models.get(capture.model.name);
    if (found) {
      let alias = `${found.name}Model`;
      for (let i = 2; usedAliases.has(alias); i++) alias = `${found.name}Model${i}`;
      usedAliases.add(alias);
      aliases.set(capture.model.name, alias);
      const named = { name: found.name, alias };
      const same = imports.find((i) => i.moduleSpecifier === found.specifier);
      if (same) (same.namedImports as { name: string; alias: string }[]).push(named);
      else
        imports.push({
          kind: StructureKind.ImportDeclaration,
          isTypeOnly: true,
          namedImports: [named],
          moduleSpecifier: found.specifier,
        });
    }
    const alias = aliases.get(capture.model.name);
    const attributes = attributesOf(capture);
    const properties = capture.fields.map((field) => {
      const text = attributeText(field, attributes[field], alias);
      if (text.startsWith('CapturedAttribute<')) usesAttribute = true;
      return { name: propertyName(field), type: text };
    });
    rows.push({
      kind: StructureKind.Interface,
      name: rowTypeName(capture.model.name),
      isExported: true,
      docs: [
        `A \`${capture.label}\` row as change capture writes it in \`before\`/\`after\`: ${
          alias
            ? `\`Attributes<${found?.name}>\` of its captured attributes, in their JSON form (\`JsonForm\`); DECIMAL and BIGINT as text, an attribute the model's type does not declare from its DataType.`
            : "its captured attributes typed from their DataTypes (the model's TypeScript type could not be followed)."
        }`,
      ],
      properties,
    });
  }

  const topics = capturedTopics(captures);
  const payload = (
    topic: string,
    typeName: string,
    docs: string[],
  ): InterfaceDeclarationStructure | undefined => {
    const found = topics.get(topic);
    if (!found) return undefined;
    const { capture, operation } = found;
    const alias = aliases.get(capture.model.name);
    const row = rowTypeName(capture.model.name);
    const pk = pkText(capture, alias);
    if (pk.includes('CapturedAttribute<')) usesAttribute = true;
    const properties: { name: string; type: string; docs?: string[] }[] = [
      { name: 'model', type: quote(capture.label) },
      { name: 'operation', type: quote(operation) },
      {
        name: 'pk',
        type: pk,
        docs: ['The key: its value, or an object of its attributes for a composite key.'],
      },
      {
        name: 'changed',
        type: operation === 'updated' ? 'string[] | null' : 'null',
        docs: [
          'The attributes the caller set, without the timestamps Sequelize adds; null when not known.',
        ],
      },
    ];
    const images = imagesOf(capture, operation);
    if (images.before)
      properties.push({ name: 'before', type: images.before === 'row' ? row : 'null' });
    if (images.after)
      properties.push({ name: 'after', type: images.after === 'row' ? row : 'null' });
    properties.push({
      name: 'occurred_at',
      type: 'string',
      docs: ['When the write happened, ISO text.'],
    });
    if (capture.tenant !== undefined)
      properties.push({
        name: 'tenant',
        type: 'string | null',
        docs: [`The row's tenant: its \`${capture.tenant}\` attribute as text, or null.`],
      });
    return {
      kind: StructureKind.Interface,
      name: typeName,
      isExported: true,
      docs,
      properties: properties.map((p) => ({ name: p.name, type: p.type, docs: p.docs ?? [] })),
      // An extension adds payload keys of its own.
      indexSignatures:
        capture.extend || capture.extendMany
          ? [{ keyName: 'key', keyType: 'string', returnType: 'unknown' }]
          : [],
    };
  };

  const install: StatementStructures[] = [];
  if (captures.length > 0) {
    const names = captures.map((c) => c.model.name);
    install.push(
      {
        kind: StructureKind.VariableStatement,
        isExported: true,
        declarationKind: VariableDeclarationKind.Const,
        docs: [
          'The models this config captures, by name, in declaration order: what `installCapture` wires.',
        ],
        declarations: [
          { name: 'capturedModels', initializer: `[${names.map(quote).join(', ')}] as const` },
        ],
      },
      {
        kind: StructureKind.Function,
        name: 'installCapture',
        isExported: true,
        docs: [
          `Install change capture on the outbox's Sequelize for exactly the models this file was generated for (${names.join(', ')}): their hooks, and a transaction (or savepoint) around each of their writes, so every ORM write of them writes its events in its own transaction.\n\n` +
            "Takes the outbox, as `createEmitters` does, because the outbox holds its Sequelize and config: the captured rows' events must commit on that Sequelize, in the write's transaction. Idempotent: a second call adds nothing.\n\n" +
            "@throws {ConfigurationError} for a captured model not defined on the outbox's Sequelize (naming it), or a config that captures other models than this file was generated for (run `npx outbox codegen`).\n" +
            `@example\n${installExample(from)}`,
        ],
        parameters: [{ name: 'outbox', type: 'Outbox<Config>' }],
        returnType: 'void',
        statements: [installBody()],
      },
    );
  }

  return {
    imports,
    rows,
    captured: (topic) => topics.has(topic),
    payload,
    install,
    get runtimeTypes() {
      return usesAttribute ? ['CapturedAttribute'] : [];
    },
    runtimeValues:
      captures.length > 0 ? ['ConfigurationError', 'installCapture as installOutboxCapture'] : [],
  };
}

/** Where the generated file imports outboxkit and the config from (its @examples do too). */
export interface ExampleImports {
  readonly runtimeImport: string;
  readonly configImport: string;
}

/**
 * The `@example` of `installCapture`: a module that compiles as written beside the
 * generated file (test/codegen/compile.test.ts compiles it), importing outboxkit and the
 * config the way the file does; without them (the analysis's own call), the two lines.
 */
function installExample(from: ExampleImports | undefined): string {
  if (!from) return 'const outbox = createOutbox(config, { sequelize });\ninstallCapture(outbox);';
  return [
    '```ts',
    `import { createOutbox } from ${quote(from.runtimeImport)};`,
    "import type { Sequelize } from 'sequelize';",
    `import config from ${quote(from.configImport)};`,
    "import { installCapture } from './outbox.generated.js'; // this file",
    '',
    '// Once, at start-up, before the first write of a captured model.',
    'export function startCapture(sequelize: Sequelize) {',
    '  const outbox = createOutbox(config, { sequelize });',
    '  installCapture(outbox);',
    '  return outbox;',
    '}',
    '```',
  ].join('\n');
}

function pkText(capture: ResolvedCapture, alias: string | undefined): string {
  const attributes = attributesOf(capture);
  if (capture.primaryKey.length === 1) {
    const key = capture.primaryKey[0]!;
    return attributeText(key, attributes[key], alias, true);
  }
  return `{ ${capture.primaryKey
    .map((k) => `${propertyName(k)}: ${attributeText(k, attributes[k], alias, true)}`)
    .join('; ')} }`;
}

function installBody(): WriterFunction {
  return (writer) => {
    writer.writeLine('const declared = outbox.config.captures.map((c) => c.model.name);');
    writer.write("if (declared.join('\\n') !== capturedModels.join('\\n')) ").inlineBlock(() => {
      writer.writeLine('throw new ConfigurationError(');
      writer.indent(() => {
        writer.writeLine(
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the generated code's template
          "`installCapture: the config captures ${declared.join(', ') || 'no model'}, but this file was generated for ${capturedModels.join(', ')}: run \\`npx outbox codegen\\``,",
        );
        writer.writeLine("{ path: 'capture' },");
      });
      writer.writeLine(');');
    });
    writer.newLine();
    writer.write('installOutboxCapture(outbox);');
  };
}
