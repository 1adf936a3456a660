/**
 * Node's compile cache of the running suite (`NODE_COMPILE_CACHE`, set by `npm run test:unit` and
 * `test:integration`, outside the checkout), for a child process that starts the CLI from its sources: each start
 * then reuses the compiled TypeScript instead of compiling it again.
 */
export function compileCacheEnv(): NodeJS.ProcessEnv {
  return process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
}
