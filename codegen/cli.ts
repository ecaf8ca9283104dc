import { type CodegenOptions, runCodegen } from './run-codegen.js';

/**
 * `outbox codegen [--check]`, as commander hands it over: map the parsed options onto
 * {@link runCodegen} and return its exit code. Unknown arguments are refused by name.
 */
export async function runCodegenCommand(
  options: Record<string, unknown>,
  args: readonly string[],
): Promise<number> {
  if (args.length > 0) {
    console.error(
      `outbox codegen: unexpected argument(s): ${args.join(' ')} (see outbox codegen --help)`,
    );
    return 2;
  }
  const text = (name: string): string | undefined =>
    typeof options[name] === 'string' ? (options[name] as string) : undefined;
  const codegen: CodegenOptions = {
    config: text('config'),
    out: text('out'),
    catalogueDir: text('catalogueDir'),
    importFrom: text('importFrom'),
    base: text('base'),
    check: options.check === true,
    allowBreaking: options.allowBreaking === true,
  };
  return runCodegen(codegen);
}
