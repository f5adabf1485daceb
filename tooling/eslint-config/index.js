// Shared flat config for every package and app. Type-checked rules run through
// the TypeScript project service, so each package's tsconfig.json decides what
// is checked.
import js from '@eslint/js'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'
import { importX } from 'eslint-plugin-import-x'
import globals from 'globals'
import tseslint from 'typescript-eslint'

/**
 * @param {{ tsconfigRootDir: string }} options
 * @returns {import('typescript-eslint').ConfigArray}
 */
export function locusConfig({ tsconfigRootDir }) {
  return tseslint.config(
    {
      ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/.locus-pi/**', '**/coverage/**', '.tools/**', '**/.docs-snippets/**'],
    },
    js.configs.recommended,
    ...tseslint.configs.strictTypeChecked,
    {
      languageOptions: {
        parserOptions: {
          projectService: true,
          tsconfigRootDir,
        },
      },
      rules: {
        '@typescript-eslint/consistent-type-imports': 'error',
        '@typescript-eslint/consistent-type-exports': 'error',
        '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
        '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
        // A sibling package is imported by its name, never by reaching into its src/ or test/.
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              { group: ['@locus/*/src', '@locus/*/src/*', '**/packages/*/src/*'], message: 'Import a sibling package by its public name.' },
              {
                regex: '^(\\.\\./)+(packages/|apps/|tooling/)?(?!src/|test/|bench/|scripts/|\\.\\./)[a-z0-9-]+/(src|test)(/|$)',
                message: "Import a sibling package by its public name (or its testing entry, such as '@locus/store/testing'), never a path into its src/ or test/.",
              },
            ],
          },
        ],
        // A function with many positional parameters takes an options object instead
        // (five, not fewer: a few hot-path constructors, such as a group branch's
        // frame, stay positional so a branch allocates nothing more).
        'max-params': ['error', 5],
        // A switch over a union names every member (or says why it has a default).
        '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false }],
      },
    },
    {
      // No import circles inside a package: a circle hides which module owns what.
      files: ['**/*.ts'],
      plugins: { 'import-x': importX },
      settings: {
        'import-x/resolver-next': [createTypeScriptImportResolver({ alwaysTryTypes: true })],
      },
      rules: {
        'import-x/no-cycle': ['error', { ignoreExternal: true }],
      },
    },
    {
      files: ['**/*.test.ts', '**/*.test-d.ts', '**/test/**', '**/bench/**', '**/src/testing.ts'],
      rules: {
        '@typescript-eslint/no-non-null-assertion': 'off',
        '@typescript-eslint/no-unsafe-assignment': 'off',
        '@typescript-eslint/no-unsafe-member-access': 'off',
        '@typescript-eslint/no-unsafe-argument': 'off',
        '@typescript-eslint/no-floating-promises': 'off',
        '@typescript-eslint/require-await': 'off',
        '@typescript-eslint/only-throw-error': 'off',
        '@typescript-eslint/prefer-promise-reject-errors': 'off',
        '@typescript-eslint/unbound-method': 'off',
      },
    },
    {
      files: ['**/*.js', '**/*.mjs'],
      ...tseslint.configs.disableTypeChecked,
      languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { ...globals.node } },
    },
  )
}
