import { AGENT, CONVERSATION, PROMPT } from './ingest-kit.ts'

// Records in the shapes Letta writes, for tests that put them on a (local) PDS.

export function agentRecord(system: string) {
  return { $type: AGENT, name: 'helper', system, createdAt: new Date().toISOString() }
}

export function conversationRecord(agentUri: string) {
  return {
    $type: CONVERSATION,
    agent: agentUri,
    title: 'a chat',
    createdAt: new Date().toISOString(),
  }
}

/** A compiled prompt in `did`'s conversation `rkey`, naming `agent`, with `content` as its memory. */
export function promptRecord(o: { did: string; rkey: string; agent: string; content: string }) {
  return {
    $type: PROMPT,
    agent: o.agent,
    conversation: `at://${o.did}/${CONVERSATION}/${o.rkey}`,
    content: `You are helpful.\n${o.content}`,
    coreMemory: o.content,
    rawSystemHash: `sha256:${'ab'.repeat(32)}`,
    memfsRevision: 'r1',
    compiledAt: new Date().toISOString(),
  }
}
