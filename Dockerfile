# One image for the `api`, `worker` and `migrate` services; the command picks the process.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production QUORUM_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY . .
USER node
EXPOSE 8080
CMD ["node", "--import", "tsx", "api/main.ts"]
