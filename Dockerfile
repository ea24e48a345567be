# syntax=docker/dockerfile:1
# prompt-appview: Node 24 runs the TypeScript sources directly (type stripping), so the
# image carries src/, demo-network/ (for `demo`) and production dependencies only; no build
# step, no devDependencies.

# --- deps: production node_modules ---------------------------------------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# --ignore-scripts: no production dependency needs an install script (our own postinstall
# only warms a development compile cache).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------
FROM node:24-bookworm-slim AS runtime
# The V8 flags (heap sizes matched to the indexer's bounded working set, wasm on Liftoff)
# are added by the entry itself, src/cli/main.ts (src/cli/node-flags.ts): Node refuses
# one of them in its options variable.
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/app/node_modules/.cache/prompt-appview/compile \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json ./
COPY --chown=node:node src ./src
# The local network `demo` runs (src/cli/demo.ts), with its zstd dictionary.
COPY --chown=node:node demo-network ./demo-network
COPY --chown=node:node drizzle ./drizzle
COPY --chown=node:node lexicons ./lexicons
COPY --chown=node:node examples ./examples
COPY --chown=node:node scripts/warm-compile-cache.ts ./scripts/
RUN mkdir -p /app/data && chown node:node /app/data
USER node
# Node's compile cache, filled at build: the first start loads every module compiled.
RUN node --max-semi-space-size=4 --max-old-space-size=256 --liftoff-only scripts/warm-compile-cache.ts
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "src/cli/main.ts", "run"]
