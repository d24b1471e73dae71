# One image for the `api`, `worker` and `migrate` services; the command picks the process.
# Build stage: compile TypeScript and bundle the workflows (both need the dev dependencies).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && node dist/worker/bundle.js /app/workflow-bundle.js

# Runtime stage: production dependencies and compiled JavaScript only, no transpiler.
FROM node:22-bookworm-slim
WORKDIR /app
# MALLOC_ARENA_MAX: see PROCESS_ENV_DEFAULTS in infra/entry-point.ts.
ENV NODE_ENV=production QUORUM_ENV=production MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
# AsyncLocalStorage without async_hooks, V8's heap bounded: see PROCESS_NODE_FLAGS in infra/entry-point.ts (a larger
# container may raise the cap here).
ENV NODE_OPTIONS="--experimental-async-context-frame --max-semi-space-size=4 --max-old-space-size=256"
COPY --from=build /app/dist ./dist
# Workflows are bundled at build time, so the worker process never loads the bundler.
COPY --from=build /app/workflow-bundle.js ./workflow-bundle.js
ENV QUORUM_WORKFLOW_BUNDLE=/app/workflow-bundle.js
USER node
EXPOSE 8080
CMD ["node", "dist/api/main.js"]
