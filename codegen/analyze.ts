import { existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import {
  type CallExpression,
  type Expression,
  ModuleKind,
  ModuleResolutionKind,
  Node,
  type ObjectLiteralExpression,
  Project,
  ScriptTarget,
  type SourceFile,
  StructureKind,
  type Type,
  ts,
} from 'ts-morph';
import type { OutboxConfig } from '../src/declare/define-outbox.js';
import { captureParts } from './generate-capture.js';
import { captureStems, eventNames } from './names.js';
import { importSpecifier } from './paths.js';

/**
 * A receiver function that does not fit its event, a codegen error: a handler (or
 * transport function) that cannot take the event's payload, a `targets` function that
 * cannot take it or does not return an iterable of strings, or a `due` function that
 * cannot take it or does not return a `Date`.
 */
export interface HandlerMismatch {
  /** The receiver's key. */
  readonly receiver: string;
  /** The option whose function does not fit. */
  readonly option: 'handle' | 'deliver' | 'targets' | 'due';
  /** What does not fit: the payload the function takes, or what it returns. */
  readonly problem: 'payload' | 'return';
  /** The event it listens to, `AnyEvent` for a wildcard, or its topic pattern. */
  readonly event: string;
  /** The function's `file:line`. */
  readonly location: string;
  /** The type the function declares: its parameter's payload, or its return type. */
  readonly handlerType: string;
  /** The type it must accept (the event's payload) or return. */
  readonly payloadType: string;
  /** The whole error, as the CLI prints it. */
  readonly message: string;
}

/** What reading the config's source found. */
export interface ConfigAnalysis {
  /** Each receiver key's handler or transport declaration, `file:line` relative to the project. */
  readonly locations: ReadonlyMap<string, string>;
  /** Each fan-out receiver's `targets` function, `file:line`. */
  readonly targetsLocations: ReadonlyMap<string, string>;
  /** Each receiver's `due` function (never a duration), `file:line`. */
  readonly dueLocations: ReadonlyMap<string, string>;
  /** Receiver functions that do not fit their event. */
  readonly mismatches: readonly HandlerMismatch[];
  /** What could not be followed statically (a receiver built in a loop, say). */
  readonly warnings: readonly string[];
  /**
   * Where each captured model's instance type is declared, by the model's name: the file
   * and the name it is exported under (`examples/shop/models.ts`, `Order`), so the
   * generated file can import it and type the envelope's rows from `Attributes<Order>`.
   * A model whose type could not be followed is missing (its rows are typed from its
   * DataTypes alone, with a warning).
   */
  readonly captureModels: ReadonlyMap<string, CaptureModelType>;
}

/**
 * Where the generated file will be and how it imports outboxkit: the captured topics'
 * envelope types are built there, in memory, so that a handler of a captured topic is
 * checked against the type the generated file gives it.
 */
export interface CaptureTypesAt {
  /** The generated file, absolute. */
  readonly file: string;
  /** Its import of outboxkit (`outboxkit`, or a relative path to the sources). */
  readonly runtimeImport: string;
}

/** Where a captured model's instance type is declared: an exported name of a project file. */
export interface CaptureModelType {
  /** The declaring file, absolute. */
  readonly file: string;
  /** The name it is exported under. */
  readonly name: string;
}

/**
 * Read `outbox.config.ts` with the TypeScript compiler (through ts-morph) and, for every
 * receiver, find where its handler or transport is declared and check that the handler
 * accepts its event's payload; likewise its `targets` function (which must also return an
 * iterable of strings) and a `due` function (which must also return a `Date`).
 *
 * The check matters for receivers declared by event name (`receiver('shop.OrderPlaced',
 * { handle })`), which the config's own types cannot see through, and for wildcards, whose
 * handlers are handed every event's payload. It compares the payload the handler's first
 * parameter declares with the event's decoded payload (`z.output` of its schema), using
 * the checker's own assignability.
 *
 * The runtime config (already loaded and validated) says which receivers exist; the
 * source only says where they are. A receiver the source walk cannot reach (built by a
 * function, in a loop) is reported as a warning, not an error: it still works, it just
 * has no location in the catalogue.
 */
export function analyzeConfig(
  configFile: string,
  projectRoot: string,
  config: OutboxConfig,
  captureTypesAt?: CaptureTypesAt,
): ConfigAnalysis {
  const project = createProject(configFile, projectRoot);
  const source = project.addSourceFileAtPath(configFile);
  const warnings: string[] = [];
  const locations = new Map<string, string>();
  const targetsLocations = new Map<string, string>();
  const dueLocations = new Map<string, string>();
  const mismatches: HandlerMismatch[] = [];
  let captureModels = new Map<string, CaptureModelType>();
  const done = (): ConfigAnalysis => ({
    locations,
    targetsLocations,
    dueLocations,
    mismatches,
    warnings,
    captureModels,
  });

  const call = findDefineOutboxCall(source);
  if (!call) {
    warnings.push(
      `${rel(projectRoot, configFile)}: no \`export default defineOutbox({ ... })\` found in the source; receiver locations and handler checks skipped`,
    );
    return done();
  }
  // Only names and paths are kept of these types: the files added next rebuild the program,
  // and types of two programs are never assignable to each other.
  captureModels = captureModelTypes(call, config, warnings);
  const stemOf = new Map(
    eventNames(
      config.eventList.map((e) => e.name),
      captureStems(config),
    ).map((n) => [n.event, n.type]),
  );
  // Before the checker: each added file would rebuild the program.
  const expectedFile = expectedTypesFile(project, configFile);
  const captureTypes =
    captureTypesAt && (config.captures ?? []).length > 0
      ? captureTypesFile(project, config, captureModels, stemOf, captureTypesAt)
      : undefined;
  const checker = project.getTypeChecker();
  // Each event's definition expression, read from the `events` literal: asking for the
  // whole defineOutbox(...) call's type would make the checker check every receiver call
  // in it too, which is most of the time on a large config.
  const definitions = eventDefinitions(call);
  let eventsType: Type | undefined;
  const payloadOf = (name: string): Type | undefined => {
    const captured = captureTypes?.getInterface(`${stemOf.get(name)}Payload`);
    if (captured) return captured.getType();
    const definition = definitions.get(name);
    if (definition) return definitionPayloadType(definition.getType(), definition);
    eventsType ??= propertyType(call.getType(), 'events', call);
    const fromCall = eventsType && propertyType(eventsType, name, call);
    return fromCall && definitionPayloadType(fromCall, call);
  };
  const declarations = receiverDeclarations(call, warnings, projectRoot);
  const stems = stemOf;

  let expected: ExpectedTypes | undefined;
  const expectedTypes = (): ExpectedTypes => {
    expected ??= {
      targets: expectedFile.getVariableDeclarationOrThrow('targets').getType(),
      due: expectedFile.getVariableDeclarationOrThrow('due').getType(),
    };
    return expected;
  };
  for (const r of config.receivers) {
    const found = declarations.get(r.key);
    if (!found) {
      warnings.push(
        `receivers["${r.key}"]: its declaration could not be followed in the source; it has no location in the catalogue and its handler${r.targets || r.due?.kind === 'at' ? ', targets and due functions are' : ' is'} not type-checked`,
      );
      continue;
    }
    const tc = checker.compilerObject;
    const payload = r.event ? payloadOf(r.event)?.compilerType : tc.getUnknownType();
    const eventLabel = r.event ?? r.pattern ?? 'AnyEvent';
    const generated = r.event ? stems.get(r.event) : undefined;
    const check = (option: HandlerMismatch['option'], target: Expression): string => {
      const location = locate(target, projectRoot);
      const fnType = functionType(target);
      if (fnType.getCallSignatures().length === 0) return location;
      const mismatch = payload && payloadMismatch(fnType, target, payload);
      if (mismatch) {
        mismatches.push(
          payloadProblem({ r, option, target, location, eventLabel, generated, ...mismatch }),
        );
        return location;
      }
      if (option === 'targets' || option === 'due') {
        const want = option === 'targets' ? expectedTypes().targets : expectedTypes().due;
        const returned = fnType.getCallSignatures()[0].getReturnType();
        // A string is an iterable of strings too — of its characters, one delivery each.
        const stringy =
          option === 'targets' &&
          (returned.isUnion() ? returned.getUnionTypes() : [returned]).some(
            (t) => t.isString() || t.isStringLiteral() || t.isTemplateLiteral(),
          );
        if (stringy || !tc.isTypeAssignableTo(returned.compilerType, want.compilerType)) {
          mismatches.push(
            returnProblem({
              r,
              option,
              target,
              location,
              eventLabel,
              returned: typeText(tc, returned.compilerType, target),
              stringy,
            }),
          );
        }
      }
      return location;
    };
    // A transport object has no payload parameter to check; a function of one event does.
    locations.set(r.key, check(found.property, found.target));
    if (r.targets) {
      if (found.targets) targetsLocations.set(r.key, check('targets', found.targets));
      else warnings.push(unfollowed(r.key, 'targets'));
    }
    if (r.due?.kind === 'at') {
      if (found.due) dueLocations.set(r.key, check('due', found.due));
      else warnings.push(unfollowed(r.key, 'due'));
    }
  }
  return done();
}

/** The warning for a targets or due function declared where the source walk cannot see. */
function unfollowed(key: string, option: 'targets' | 'due'): string {
  return `receivers["${key}"].${option}: the function could not be followed in the source (declared outside the receiver's options literal?); the catalogue names it by its function name instead of file:line, and it is not type-checked`;
}

/**
 * A function's type from its declaration where there is one: asking at the use site would
 * make the checker resolve the receiver(...) call around it, for nothing.
 */
function functionType(target: Expression): Type {
  const declared =
    Node.isIdentifier(target) || Node.isPropertyAccessExpression(target)
      ? declarationOf(target)
      : undefined;
  return (declared ?? target).getType();
}

/** The payload a function takes, when the event's payload cannot be passed to it. */
function payloadMismatch(
  fnType: Type,
  target: Expression,
  payload: ts.Type,
): { takes: string; decodes: string } | undefined {
  const accepted = acceptedPayload(fnType, target);
  const tc = target.getProject().getTypeChecker().compilerObject;
  if (!accepted || tc.isTypeAssignableTo(payload, accepted.compilerType)) return undefined;
  return {
    takes: typeText(tc, accepted.compilerType, target),
    decodes: typeText(tc, payload, target),
  };
}

interface Problem {
  readonly r: OutboxConfig['receivers'][number];
  readonly option: HandlerMismatch['option'];
  readonly target: Expression;
  readonly location: string;
  readonly eventLabel: string;
}

/** How each option's function is named in an error. */
const WHAT: Record<HandlerMismatch['option'], string> = {
  handle: 'handler',
  deliver: 'transport function',
  targets: 'targets function',
  due: 'due function',
};

function payloadProblem(
  p: Problem & { generated: string | undefined; takes: string; decodes: string },
): HandlerMismatch {
  const what = WHAT[p.option];
  const subject =
    p.option === 'handle' || p.option === 'deliver'
      ? `receivers["${p.r.key}"]`
      : `receivers["${p.r.key}"].${p.option}`;
  return {
    receiver: p.r.key,
    option: p.option,
    problem: 'payload',
    event: p.eventLabel,
    location: p.location,
    handlerType: p.takes,
    payloadType: p.decodes,
    message: [
      `${p.location}: ${subject} listens to ${p.eventLabel}, but its ${what} ${describeTarget(p.target)} cannot take that payload`,
      `  the ${what} takes a payload of type: ${p.takes}`,
      p.r.event
        ? `  ${p.eventLabel} decodes to:              ${p.decodes}`
        : '  a wildcard is handed every event, so its payload is: unknown',
      p.r.event
        ? p.option === 'targets' || p.option === 'due'
          ? `  Type the function as the generated ${p.generated}${p.option === 'targets' ? 'Targets' : 'Due'} (its event is a FiringEvent<${p.generated}Payload>), or make the receiver listen to the event the ${what} handles.`
          : `  Type the parameter as the generated ${p.generated}Event (OutboxEvent<${p.generated}Payload>), or make the receiver listen to the event the ${what} handles.`
        : p.option === 'targets' || p.option === 'due'
          ? '  Type the parameter as FiringEvent (payload unknown) and narrow on event.name.'
          : '  Type the parameter as OutboxEvent (payload unknown) and narrow on event.name.',
    ].join('\n'),
  };
}

function returnProblem(p: Problem & { returned: string; stringy: boolean }): HandlerMismatch {
  const targets = p.option === 'targets';
  const want = targets ? 'Iterable<string> | Promise<Iterable<string>>' : 'Date | Promise<Date>';
  return {
    receiver: p.r.key,
    option: p.option,
    problem: 'return',
    event: p.eventLabel,
    location: p.location,
    handlerType: p.returned,
    payloadType: want,
    message: [
      `${p.location}: receivers["${p.r.key}"].${p.option} must return ${targets ? 'an iterable of strings (string[], a Set<string>, a generator) or a promise of one' : 'a Date or a promise of one'}, but its ${WHAT[p.option]} ${describeTarget(p.target)} does not`,
      `  it returns: ${p.returned}`,
      `  expected:   ${want}${p.stringy ? ' (a string is refused: it would fan out to its characters, one delivery each)' : ''}`,
      targets
        ? "  It runs inside the caller's transaction at fire time: return the target strings (or a promise of them), one delivery row each."
        : "  It runs inside the caller's transaction at fire time: return the Date the delivery is due (or a promise of it), or declare a duration such as { hours: 48 }.",
    ].join('\n'),
  };
}

/** What a targets and a due function must return, as the checker's types. */
interface ExpectedTypes {
  readonly targets: Type;
  readonly due: Type;
}

/**
 * An in-memory file, never written, declaring `Iterable<string>` and `Date` as types of
 * the config's own program (so its lib decides what they are).
 */
function expectedTypesFile(project: Project, configFile: string): SourceFile {
  return project.createSourceFile(
    join(dirname(configFile), '__outboxkit_codegen_expected__.ts'),
    'export declare const targets: Iterable<string> | Promise<Iterable<string>>;\nexport declare const due: Date | Promise<Date>;\n',
    { overwrite: true },
  );
}

function createProject(configFile: string, projectRoot: string): Project {
  const tsConfigFilePath = findTsconfig(dirname(configFile), projectRoot);
  // A .js/.mjs/.cjs config is read like a .ts one: without allowJs the checker has no
  // source file for it (and crashed reading its default export's symbol).
  const js = /\.[mc]?js$/.test(configFile) ? { allowJs: true } : {};
  if (tsConfigFilePath) {
    return new Project({
      tsConfigFilePath,
      skipAddingFilesFromTsConfig: true,
      compilerOptions: js,
    });
  }
  return new Project({
    compilerOptions: {
      ...js,
      strict: true,
      target: ScriptTarget.ES2022,
      module: ModuleKind.NodeNext,
      moduleResolution: ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      noEmit: true,
    },
  });
}

function findTsconfig(from: string, root: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = join(dir, 'tsconfig.json');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir || relative(root, dir).startsWith('..') || dir === root) return undefined;
    dir = parent;
  }
}

/**
 * The `defineOutbox(...)` call behind the default export, through variables and through
 * a function of the project that returns it (`export default shopConfig(models)`, a
 * config made per Sequelize: its receivers and captures are read in that function).
 */
function findDefineOutboxCall(source: SourceFile): CallExpression | undefined {
  for (const assignment of source.getExportAssignments()) {
    if (assignment.isExportEquals()) continue;
    const call = resolveTo(assignment.getExpression(), Node.isCallExpression);
    if (call) return throughFactory(call);
  }
  const symbol = source.getDefaultExportSymbol();
  for (const declaration of symbol?.getDeclarations() ?? []) {
    if (Node.isVariableDeclaration(declaration)) {
      const init = declaration.getInitializer();
      const call = init && resolveTo(init, Node.isCallExpression);
      if (call) return throughFactory(call);
    }
  }
  return undefined;
}

/** A call of a project function that returns `defineOutbox(...)`: that call; else the call itself. */
function throughFactory(call: CallExpression, depth = 0): CallExpression {
  const callee = call.getExpression();
  if (depth > 5 || !Node.isIdentifier(callee) || callee.getText() === 'defineOutbox') return call;
  const declaration = declarationOf(callee);
  const fn =
    declaration && Node.isVariableDeclaration(declaration)
      ? declaration.getInitializer()
      : declaration;
  if (!fn || fn.getSourceFile().isInNodeModules()) return call;
  if (
    !Node.isFunctionDeclaration(fn) &&
    !Node.isArrowFunction(fn) &&
    !Node.isFunctionExpression(fn)
  )
    return call;
  const body = fn.getBody();
  const returned =
    body && Node.isBlock(body)
      ? body.getStatements().find(Node.isReturnStatement)?.getExpression()
      : body;
  const inner = returned && resolveTo(returned, Node.isCallExpression);
  if (!inner) return call;
  const name = inner.getExpression().getText();
  return name === 'defineOutbox' ? inner : throughFactory(inner, depth + 1);
}

/** The `capture(...)` call of a `capture: [...]` element, through `.replace(...)`. */
function captureCall(element: Node): CallExpression | undefined {
  let call = resolveTo(element, Node.isCallExpression);
  for (let i = 0; call && i < 10; i++) {
    const callee = call.getExpression();
    if (!Node.isPropertyAccessExpression(callee) || callee.getName() !== 'replace') return call;
    call = resolveTo(callee.getExpression(), Node.isCallExpression);
  }
  return call;
}

/**
 * Each captured model's instance type, read off the model expression of its `capture(...)`
 * call: the return type of its construct signature (`ModelStatic<Order>` or `typeof
 * Order` → `Order`), where that type is an exported declaration of a project file.
 * Matched to the config's captures by position, which the source shares with the config.
 */
function captureModelTypes(
  call: CallExpression,
  config: OutboxConfig,
  warnings: string[],
): Map<string, CaptureModelType> {
  const out = new Map<string, CaptureModelType>();
  const captures = config.captures ?? [];
  if (captures.length === 0) return out;
  const [arg] = call.getArguments();
  const options = arg && resolveTo(arg, Node.isObjectLiteralExpression);
  const list = options && objectProperty(options, 'capture');
  const array = list && resolveTo(list, Node.isArrayLiteralExpression);
  const models = (array?.getElements() ?? []).map((e) => captureCall(e)?.getArguments()[0]);
  if (!array || models.length !== captures.length || models.some((m) => !m)) {
    warnings.push(
      'capture: the capture(Model, …) calls could not be followed in the source (built outside the `capture: [...]` literal?); their rows are typed from their DataTypes alone',
    );
    return out;
  }
  captures.forEach((capture, i) => {
    const found = instanceTypeOf(models[i]!);
    if (found) out.set(capture.model.name, found);
    else
      warnings.push(
        `capture(${capture.model.name}): its instance type is not an exported declaration of the project (declare the model as an exported interface or class); its rows are typed from its DataTypes alone`,
      );
  });
  return out;
}

function instanceTypeOf(model: Node): CaptureModelType | undefined {
  const [signature] = model.getType().getConstructSignatures();
  const instance = signature?.getReturnType();
  const symbol = instance?.getSymbol() ?? instance?.getAliasSymbol();
  const declaration = symbol?.getDeclarations()[0];
  if (!symbol || !declaration) return undefined;
  const file = declaration.getSourceFile();
  if (file.isInNodeModules()) return undefined;
  const name = symbol.getName();
  const exported = file.getExportedDeclarations().get(name);
  if (!exported?.some((d) => d === declaration)) return undefined;
  return { file: file.getFilePath(), name };
}

interface ReceiverDeclaration {
  /** `handle` or `deliver`. */
  readonly property: 'handle' | 'deliver';
  /** The handler or transport expression. */
  readonly target: Expression;
  /** The `targets` expression, if declared. */
  readonly targets: Expression | undefined;
  /** The `due` expression (a function or a duration), if declared. */
  readonly due: Expression | undefined;
}

/** Walk `receivers: { ... }` (through spreads and variables) to each receiver's handler. */
function receiverDeclarations(
  call: CallExpression,
  warnings: string[],
  projectRoot: string,
): Map<string, ReceiverDeclaration> {
  const out = new Map<string, ReceiverDeclaration>();
  const [arg] = call.getArguments();
  const options = arg && resolveTo(arg, Node.isObjectLiteralExpression);
  const receivers = options && objectProperty(options, 'receivers');
  const literal = receivers && resolveTo(receivers, Node.isObjectLiteralExpression);
  if (!literal) return out;
  const visit = (object: ObjectLiteralExpression) => {
    for (const property of object.getProperties()) {
      if (Node.isSpreadAssignment(property)) {
        const spread = resolveTo(property.getExpression(), Node.isObjectLiteralExpression);
        if (spread) visit(spread);
        else
          warnings.push(
            `${locate(property, projectRoot)}: a spread of receivers the source walk cannot follow`,
          );
        continue;
      }
      let name: string | undefined;
      let value: Node | undefined;
      if (Node.isPropertyAssignment(property)) {
        name = propertyKey(property.getNameNode());
        value = property.getInitializer();
      } else if (Node.isShorthandPropertyAssignment(property)) {
        name = property.getName();
        value = property.getNameNode();
      }
      if (name === undefined || !value) continue;
      const receiverCall = resolveTo(value, Node.isCallExpression);
      const optionsArg = receiverCall?.getArguments()[1];
      const optionsLiteral = optionsArg && resolveTo(optionsArg, Node.isObjectLiteralExpression);
      if (!optionsLiteral) continue;
      const keyNode = objectProperty(optionsLiteral, 'key');
      const key = keyNode && Node.isStringLiteral(keyNode) ? keyNode.getLiteralValue() : name;
      const targets = objectProperty(optionsLiteral, 'targets');
      const due = objectProperty(optionsLiteral, 'due');
      for (const prop of ['handle', 'deliver'] as const) {
        const target = objectProperty(optionsLiteral, prop);
        if (target) {
          out.set(key, {
            property: prop,
            target: unwrapCasts(target),
            targets: targets && unwrapCasts(targets),
            due: due && unwrapCasts(due),
          });
        }
      }
    }
  };
  visit(literal);
  return out;
}

/**
 * The expression under `as`, `satisfies`, `!` and parentheses. A cast makes the compiler
 * stop checking a handler (`handle: charge as Handler`); codegen checks the function the
 * cast hides, which is the one that will be called.
 */
function unwrapCasts(expression: Expression): Expression {
  let node = expression;
  while (
    Node.isParenthesizedExpression(node) ||
    Node.isAsExpression(node) ||
    Node.isSatisfiesExpression(node) ||
    Node.isNonNullExpression(node) ||
    Node.isTypeAssertion(node)
  ) {
    node = node.getExpression();
  }
  return node;
}

/** A property's value in an object literal (`handle: x` → `x`, shorthand `handle` → `handle`). */
function objectProperty(object: ObjectLiteralExpression, name: string): Expression | undefined {
  const property = object.getProperty(name);
  if (!property) return undefined;
  if (Node.isPropertyAssignment(property)) return property.getInitializer();
  if (Node.isShorthandPropertyAssignment(property)) return property.getNameNode();
  if (Node.isMethodDeclaration(property)) return property as unknown as Expression;
  return undefined;
}

function propertyKey(node: Node): string | undefined {
  if (Node.isIdentifier(node)) return node.getText();
  if (Node.isStringLiteral(node) || Node.isNoSubstitutionTemplateLiteral(node))
    return node.getLiteralValue();
  if (Node.isNumericLiteral(node)) return node.getLiteralText();
  if (Node.isComputedPropertyName(node)) {
    const inner = node.getExpression();
    if (Node.isStringLiteral(inner)) return inner.getLiteralValue();
  }
  return undefined;
}

/**
 * Follow an expression to a node of the wanted kind: through parentheses, `as` and
 * `satisfies`, and identifiers (also imported ones) to their variable's initializer.
 */
function resolveTo<T extends Node>(
  start: Node,
  is: (node: Node) => node is T,
  depth = 0,
): T | undefined {
  if (depth > 20) return undefined;
  let node = start;
  while (
    Node.isParenthesizedExpression(node) ||
    Node.isAsExpression(node) ||
    Node.isSatisfiesExpression(node) ||
    Node.isNonNullExpression(node)
  ) {
    node = node.getExpression();
  }
  if (is(node)) return node;
  if (Node.isIdentifier(node) || Node.isPropertyAccessExpression(node)) {
    const declaration = declarationOf(node);
    if (declaration && Node.isVariableDeclaration(declaration)) {
      const init = declaration.getInitializer();
      if (init) return resolveTo(init, is, depth + 1);
    }
  }
  return undefined;
}

/** The declaration an identifier names, through imports and re-exports. */
function declarationOf(node: Node): Node | undefined {
  const symbol = node.getSymbol();
  if (!symbol) return undefined;
  const target = symbol.isAlias() ? (symbol.getAliasedSymbol() ?? symbol) : symbol;
  return target.getDeclarations()[0] ?? target.getValueDeclaration();
}

/**
 * Where a handler lives: the declaration an identifier names (a function in another file),
 * or the expression itself (an inline arrow function, a `webhook({ ... })` call).
 */
function locate(expression: Node, projectRoot: string): string {
  let node: Node = expression;
  if (Node.isIdentifier(expression) || Node.isPropertyAccessExpression(expression)) {
    const declaration = declarationOf(expression);
    if (declaration && !declaration.getSourceFile().isInNodeModules()) node = declaration;
  }
  return `${rel(projectRoot, node.getSourceFile().getFilePath())}:${node.getStartLineNumber()}`;
}

function rel(root: string, file: string): string {
  return relative(root, file).split(sep).join('/');
}

function propertyType(type: Type, name: string, at: Node): Type | undefined {
  return type.getProperty(name)?.getTypeAtLocation(at);
}

/** `z.output` of an event definition's schema: `definition.schema._zod.output`. */
function definitionPayloadType(definition: Type, at: Node): Type | undefined {
  const schema = propertyType(definition, 'schema', at);
  const internals = schema && propertyType(schema, '_zod', at);
  return internals && propertyType(internals, 'output', at);
}

/** The definition expression of each event in `events: { ... }`, through spreads and variables. */
function eventDefinitions(call: CallExpression): Map<string, Expression> {
  const out = new Map<string, Expression>();
  const [arg] = call.getArguments();
  const options = arg && resolveTo(arg, Node.isObjectLiteralExpression);
  const events = options && objectProperty(options, 'events');
  const literal = events && resolveTo(events, Node.isObjectLiteralExpression);
  const visit = (object: ObjectLiteralExpression) => {
    for (const property of object.getProperties()) {
      if (Node.isSpreadAssignment(property)) {
        const spread = resolveTo(property.getExpression(), Node.isObjectLiteralExpression);
        if (spread) visit(spread);
      } else if (Node.isPropertyAssignment(property)) {
        const name = propertyKey(property.getNameNode());
        const value = property.getInitializer();
        if (name !== undefined && value) out.set(name, value);
      } else if (Node.isShorthandPropertyAssignment(property)) {
        out.set(property.getName(), property.getNameNode());
      }
    }
  };
  if (literal) visit(literal);
  return out;
}

/** The payload type a handler's first parameter accepts, or undefined when it reads no payload. */
function acceptedPayload(handler: Type, at: Node): Type | undefined {
  const [signature] = handler.getCallSignatures();
  const [parameter] = signature?.getParameters() ?? [];
  if (!parameter) return undefined;
  const parameterType = parameter.getTypeAtLocation(at);
  if (parameterType.isAny() || parameterType.isUnknown()) return undefined;
  return propertyType(parameterType, 'payload', at);
}

/** How an error names a handler: its identifier, or "(inline function)". */
function describeTarget(target: Expression): string {
  if (Node.isIdentifier(target) || Node.isPropertyAccessExpression(target)) return target.getText();
  if (Node.isArrowFunction(target) || Node.isFunctionExpression(target)) return '(inline function)';
  return '(expression)';
}

function typeText(checker: ts.TypeChecker, type: ts.Type, at: Node): string {
  return checker.typeToString(
    type,
    at.compilerNode,
    ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope,
  );
}

/**
 * An in-memory file beside the generated one, never written, declaring the captured
 * topics' row and envelope types exactly as the generated file does (the same imports),
 * so the checker can compare a handler with them.
 */
function captureTypesFile(
  project: Project,
  config: OutboxConfig,
  models: ReadonlyMap<string, CaptureModelType>,
  stems: ReadonlyMap<string, string>,
  at: CaptureTypesAt,
): SourceFile {
  const imports = new Map(
    [...models].map(([model, found]) => [
      model,
      { specifier: importSpecifier(at.file, found.file), name: found.name },
    ]),
  );
  const parts = captureParts(config, imports);
  const payloads = [...stems]
    .map(([event, stem]) => parts.payload(event, `${stem}Payload`, []))
    .filter((p) => p !== undefined);
  return project.createSourceFile(
    join(dirname(at.file), '__outboxkit_codegen_capture__.ts'),
    {
      statements: [
        {
          kind: StructureKind.ImportDeclaration,
          isTypeOnly: true,
          namedImports: ['CapturedAttribute'],
          moduleSpecifier: at.runtimeImport,
        },
        ...parts.imports,
        ...parts.rows,
        ...payloads,
      ],
    },
    { overwrite: true },
  );
}
