# One image for the `api`, `worker` and `migrate` services; the command picks the process.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production QUORUM_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY . .
# Workflows are bundled once at build time, so the worker process never loads the bundler.
RUN node --import tsx worker/bundle.ts /app/workflow-bundle.js
ENV QUORUM_WORKFLOW_BUNDLE=/app/workflow-bundle.js
USER node
EXPOSE 8080
CMD ["node", "--import", "tsx", "api/main.ts"]
