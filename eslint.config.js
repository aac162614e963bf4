// Lint: typescript-eslint with type information (floating promises, unused code, unsafe any), import-x for import
// circles and the layers of docs/architecture.md, Prettier for layout (eslint-config-prettier turns off what it owns).
// bench/gen-events.mjs is a verbatim copy of the team's generator and is left as it is.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// The layers, bottom up: a folder may import those below it, never one above (docs/architecture.md). Side modules
// (ledger, sinks, sources, sandbox) import no stage; sinks take only the Lead type from mapping.
// presets/ (the sources leadledger recognizes) reads records of sources/ and maps them with mapping/.
const LAYERS = {
  sources: [
    'mapping',
    'presets',
    'decide',
    'engine',
    'deliver',
    'report',
    'commands',
    'cli',
    'ledger',
    'sinks',
    'sandbox',
    'serve',
  ],
  ledger: [
    'sources',
    'mapping',
    'presets',
    'decide',
    'engine',
    'deliver',
    'report',
    'commands',
    'cli',
    'sinks',
    'sandbox',
    'serve',
  ],
  sandbox: [
    'sources',
    'mapping',
    'presets',
    'decide',
    'engine',
    'deliver',
    'report',
    'commands',
    'cli',
    'ledger',
    'sinks',
    'serve',
  ],
  mapping: ['presets', 'decide', 'engine', 'deliver', 'report', 'commands', 'cli', 'ledger', 'sandbox', 'serve'],
  presets: ['decide', 'engine', 'deliver', 'report', 'commands', 'cli', 'ledger', 'sinks', 'sandbox', 'serve'],
  sinks: [
    'sources',
    'presets',
    'decide',
    'engine',
    'deliver',
    'report',
    'commands',
    'cli',
    'ledger',
    'sandbox',
    'serve',
  ],
  decide: ['sources', 'presets', 'engine', 'deliver', 'report', 'commands', 'cli', 'sinks', 'sandbox', 'serve'],
  deliver: ['sources', 'presets', 'engine', 'report', 'commands', 'cli', 'sandbox', 'serve'],
  engine: ['deliver', 'report', 'commands', 'cli', 'sinks', 'sandbox', 'serve'],
  report: ['engine', 'presets', 'commands', 'cli', 'sinks', 'sandbox', 'serve'],
  serve: ['commands', 'cli', 'sandbox'],
  commands: ['cli', 'sandbox'],
};

const zones = [
  ...Object.entries(LAYERS).map(([target, above]) => ({
    target: `./src/${target}`,
    from: above.map((f) => `./src/${f}`),
    message: `src/${target}/ sits below these folders (docs/architecture.md): move the shared piece down instead`,
  })),
  {
    target: './src/sinks',
    from: './src/mapping',
    except: ['./types.ts'],
    message: 'sinks take only the Lead type from mapping',
  },
  {
    // The config file's `sinks` section is made from the sink registry; nothing else of mapping/ knows a sink.
    target: './src/mapping',
    from: './src/sinks',
    except: ['./registry.ts', './definition.ts'],
    message: 'mapping/ takes only the sink registry (the config schema of each sink), never a sink',
  },
  {
    target: './src/report',
    from: './src/sources',
    except: ['./types.ts', './unreadable.ts'],
    message: 'the report takes only the types of how inputs were read from sources, and which records were unreadable',
  },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cache/', 'bench/.data/', '.tmp/', 'coverage/', 'bench/gen-events.mjs'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test() and describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/require-await': 'off',
      // The engine keeps Kind and Outcome in Int32Arrays and compares them with the numbers read back.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Record values are unknown (JSON.parse); a typeof check leaves them unknown to TypeScript, so String(v) after
      // one is reported though no object reaches it.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver': undefined,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.check.json' })],
    },
    rules: {
      // A cycle cannot run through a package (none imports leadledger): not parsing them saves most of the rule's time.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-self-import': 'error',
      'import-x/no-duplicates': ['error', { 'prefer-inline': true }],
      'import-x/no-useless-path-segments': 'error',
      'import-x/first': 'error',
      'import-x/newline-after-import': 'error',
      'import-x/no-extraneous-dependencies': [
        'error',
        { devDependencies: ['test/**', 'bench/**', 'scripts/**', 'eslint.config.js'] },
      ],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      // Only cli/ reads argv, exits or prints (docs/architecture.md): the rest returns data and takes a context.
      'no-console': 'error',
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'exit', message: 'only cli/main.ts ends the process' },
        { object: 'process', property: 'argv', message: 'only cli/ reads argv' },
      ],
    },
  },
  { files: ['src/cli/**/*.ts'], rules: { 'no-console': 'off', 'no-restricted-properties': 'off' } },
  {
    // Tests read the CLI's JSON output and poke at internals: any is their daily bread there, and assertions on it
    // are the point. They are still held to floating promises, unused code and the import rules.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-redundant-type-constituents': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs'], languageOptions: { globals: { ...globals.node } } },
  prettier,
);
