// Lint for the bugs tsc does not catch: a promise nobody awaits (its rejection is an
// unhandledRejection, which crashes the agent), a promise passed where a void callback is
// expected, `await` on a non-promise, and `any` without a stated reason. Style is not linted
// here; unused names are tsc's job (noUnusedLocals/noUnusedParameters).
import comments from '@eslint-community/eslint-plugin-eslint-comments';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.bench-build/', '.scratch/', '.state/', 'node_modules/', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [tseslint.configs.base],
    plugins: { '@eslint-community/eslint-comments': comments },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // `any` (or any other exception) only with the reason: `// eslint-disable-next-line <rule> -- why`.
      '@eslint-community/eslint-comments/require-description': 'error',
    },
  },
);
