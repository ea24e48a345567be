import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { VERSION } from '../../config/version.ts'

// OpenAPI from the routes' own schemas, so it cannot drift; registered on the root instance
// before the routes it describes, as swagger collects routes as they are added.
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'prompt-appview',
        version: VERSION,
        description:
          'AppView for Letta compiled prompts (xyz.quasigod.lab.letta.compiledPrompt): lookups, lists, change feed. Errors are {"error","message"}.',
      },
      tags: [
        { name: 'prompts' },
        { name: 'conversations' },
        { name: 'agents' },
        { name: 'changes' },
        { name: 'stats' },
        { name: 'ops' },
        { name: 'admin', description: 'Present only when ADMIN_TOKEN is set' },
      ],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}
