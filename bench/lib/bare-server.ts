import Fastify from 'fastify'

// The read benchmark's baseline: a bare Fastify route answering a constant, in its own
// process like the API under test, listening on PORT.

const app = Fastify({ logger: false })
const constant = { ok: true }
app.get('/v1/prompts/:did/:rkey', async () => constant)
app.get('/v1/prompts', async () => constant)
app.get('/readyz', async () => constant)
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
