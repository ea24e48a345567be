/**
 * GENERATED CODE - DO NOT MODIFY
 */
import {
  type LexiconDoc,
  Lexicons,
  ValidationError,
  type ValidationResult,
} from '@atproto/lexicon'
import { type $Typed, is$typed, maybe$typed } from './util.js'

export const schemaDict = {
  XyzQuasigodLabLettaAppviewDefs: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.defs',
    description:
      'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons: the views prompt-appview answers its xyz.quasigod.lab.letta.appview.* queries with. Each is the JSON of the matching /v1 REST answer (SPEC section 6).',
    defs: {
      promptView: {
        type: 'object',
        description:
          'One compiledPrompt with its flags and one reason per flag.',
        required: [
          'uri',
          'cid',
          'did',
          'rkey',
          'rev',
          'record',
          'flags',
          'conversation',
          'agent',
          'recompiles',
          'changed',
          'indexedAt',
          'validationError',
          'provenance',
          'reasons',
        ],
        nullable: ['validationError', 'changed'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
            description: 'CID of the record version shown.',
          },
          did: {
            type: 'string',
            format: 'did',
          },
          rkey: {
            type: 'string',
            format: 'record-key',
          },
          rev: {
            type: 'string',
            description: 'Repo rev of the commit that wrote this version.',
          },
          record: {
            type: 'unknown',
            description: 'The record as published.',
          },
          flags: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
              ],
            },
          },
          conversation: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#conversationLink',
          },
          agent: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#agentLink',
          },
          recompiles: {
            type: 'integer',
            minimum: 0,
            description: 'Versions of this record seen after the first.',
          },
          changed: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: ['template', 'memory', 'metadata', 'other'],
            },
            description:
              'What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept.',
          },
          indexedAt: {
            type: 'string',
            format: 'datetime',
          },
          validationError: {
            type: 'string',
            description:
              'Why the record does not validate against its lexicon (flag invalid); null when it does.',
          },
          provenance: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#provenance',
          },
          reasons: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#reasons',
          },
        },
      },
      promptListItem: {
        type: 'object',
        description:
          'A prompt in a list: the promptView without reasons, with the size of its content.',
        required: [
          'uri',
          'cid',
          'did',
          'rkey',
          'rev',
          'record',
          'flags',
          'conversation',
          'agent',
          'recompiles',
          'changed',
          'indexedAt',
          'validationError',
          'provenance',
          'contentBytes',
        ],
        nullable: ['validationError', 'contentBytes', 'changed'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
          },
          did: {
            type: 'string',
            format: 'did',
          },
          rkey: {
            type: 'string',
            format: 'record-key',
          },
          rev: {
            type: 'string',
          },
          record: {
            type: 'unknown',
            description: 'The record without content and coreMemory.',
          },
          flags: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
              ],
            },
          },
          conversation: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#conversationLink',
          },
          agent: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#agentLink',
          },
          recompiles: {
            type: 'integer',
            minimum: 0,
          },
          changed: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: ['template', 'memory', 'metadata', 'other'],
            },
            description:
              'What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept.',
          },
          indexedAt: {
            type: 'string',
            format: 'datetime',
          },
          validationError: {
            type: 'string',
          },
          provenance: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#provenance',
          },
          contentBytes: {
            type: 'integer',
            minimum: 0,
            description: "UTF-8 bytes of the record's content.",
          },
        },
      },
      searchItem: {
        type: 'object',
        description:
          'A promptListItem with a snippet of content around the first match.',
        required: [
          'uri',
          'cid',
          'did',
          'rkey',
          'rev',
          'record',
          'flags',
          'conversation',
          'agent',
          'recompiles',
          'changed',
          'indexedAt',
          'validationError',
          'provenance',
          'contentBytes',
          'snippet',
        ],
        nullable: ['validationError', 'contentBytes', 'changed'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
          },
          did: {
            type: 'string',
            format: 'did',
          },
          rkey: {
            type: 'string',
            format: 'record-key',
          },
          rev: {
            type: 'string',
          },
          record: {
            type: 'unknown',
            description: 'The record without content and coreMemory.',
          },
          flags: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
              ],
            },
          },
          conversation: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#conversationLink',
          },
          agent: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#agentLink',
          },
          recompiles: {
            type: 'integer',
            minimum: 0,
          },
          changed: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: ['template', 'memory', 'metadata', 'other'],
            },
            description:
              'What the current version changed since the revision before it (as on its revision): template, memory, metadata or other; [] for a first version; null when indexed before this was kept.',
          },
          indexedAt: {
            type: 'string',
            format: 'datetime',
          },
          validationError: {
            type: 'string',
          },
          provenance: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#provenance',
          },
          contentBytes: {
            type: 'integer',
            minimum: 0,
          },
          snippet: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#snippet',
          },
        },
      },
      snippet: {
        type: 'object',
        required: ['text', 'matches'],
        properties: {
          text: {
            type: 'string',
            description:
              'Plain text around the first match (escape it to show it as HTML).',
          },
          matches: {
            type: 'array',
            items: {
              type: 'ref',
              ref: 'lex:xyz.quasigod.lab.letta.appview.defs#snippetMatch',
            },
          },
        },
      },
      snippetMatch: {
        type: 'object',
        description:
          "Where a word of q occurs in the snippet's text: UTF-16 offsets [start, end).",
        required: ['start', 'end'],
        properties: {
          start: {
            type: 'integer',
            minimum: 0,
          },
          end: {
            type: 'integer',
            minimum: 0,
          },
        },
      },
      conversationLink: {
        type: 'object',
        description:
          "The conversation in the prompt's slot; exists means present and visible.",
        required: ['uri', 'exists'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          exists: {
            type: 'boolean',
          },
        },
      },
      agentLink: {
        type: 'object',
        description:
          'The agent the record names (null when it names none); exists means indexed and visible.',
        required: ['uri', 'exists'],
        nullable: ['uri'],
        properties: {
          uri: {
            type: 'string',
            description: 'As the record wrote it: not checked to be an at-uri.',
          },
          exists: {
            type: 'boolean',
          },
        },
      },
      provenance: {
        type: 'object',
        description:
          'How the record was obtained: source, whether its commit was verified, commit CID and rev.',
        required: ['source', 'verified', 'commit', 'rev'],
        nullable: ['source', 'commit'],
        properties: {
          source: {
            type: 'string',
            knownValues: ['firehose', 'jetstream', 'backfill', 'replay'],
          },
          verified: {
            type: 'boolean',
          },
          commit: {
            type: 'string',
          },
          rev: {
            type: 'string',
          },
        },
      },
      reasons: {
        type: 'object',
        description:
          "One plain-language sentence per flag set, naming its evidence; the keys are exactly the prompt's flags.",
        properties: {
          orphaned: {
            type: 'string',
          },
          mismatched: {
            type: 'string',
          },
          staleTemplate: {
            type: 'string',
          },
          staleMemory: {
            type: 'string',
          },
          coreMemoryDetached: {
            type: 'string',
          },
          invalid: {
            type: 'string',
          },
        },
      },
      flagCounts: {
        type: 'object',
        description: 'Visible prompts per flag, and ok for those with none.',
        required: [
          'orphaned',
          'mismatched',
          'staleTemplate',
          'staleMemory',
          'coreMemoryDetached',
          'invalid',
          'ok',
        ],
        properties: {
          orphaned: {
            type: 'integer',
            minimum: 0,
          },
          mismatched: {
            type: 'integer',
            minimum: 0,
          },
          staleTemplate: {
            type: 'integer',
            minimum: 0,
          },
          staleMemory: {
            type: 'integer',
            minimum: 0,
          },
          coreMemoryDetached: {
            type: 'integer',
            minimum: 0,
          },
          invalid: {
            type: 'integer',
            minimum: 0,
          },
          ok: {
            type: 'integer',
            minimum: 0,
          },
        },
      },
      agentPromptCounts: {
        type: 'object',
        description:
          'Visible prompts naming the agent: total, per flag, and ok.',
        required: [
          'total',
          'orphaned',
          'mismatched',
          'staleTemplate',
          'staleMemory',
          'coreMemoryDetached',
          'invalid',
          'ok',
        ],
        properties: {
          total: {
            type: 'integer',
            minimum: 0,
          },
          orphaned: {
            type: 'integer',
            minimum: 0,
          },
          mismatched: {
            type: 'integer',
            minimum: 0,
          },
          staleTemplate: {
            type: 'integer',
            minimum: 0,
          },
          staleMemory: {
            type: 'integer',
            minimum: 0,
          },
          coreMemoryDetached: {
            type: 'integer',
            minimum: 0,
          },
          invalid: {
            type: 'integer',
            minimum: 0,
          },
          ok: {
            type: 'integer',
            minimum: 0,
          },
        },
      },
      conversationPrompt: {
        type: 'object',
        description: "The visible prompt in a conversation's slot.",
        required: ['uri', 'flags'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          flags: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
              ],
            },
          },
        },
      },
      revisionView: {
        type: 'object',
        description: 'One revision (record version) of a prompt.',
        required: [
          'rev',
          'cid',
          'compiledAt',
          'rawSystemHash',
          'memfsRevision',
          'contentHash',
          'seenAt',
          'changed',
          'memoryFiles',
        ],
        nullable: [
          'compiledAt',
          'rawSystemHash',
          'memfsRevision',
          'contentHash',
          'changed',
          'memoryFiles',
        ],
        properties: {
          rev: {
            type: 'string',
          },
          cid: {
            type: 'string',
          },
          compiledAt: {
            type: 'string',
            description: 'As the record wrote it.',
          },
          rawSystemHash: {
            type: 'string',
          },
          memfsRevision: {
            type: 'string',
          },
          contentHash: {
            type: 'string',
            description: 'Lowercase hex SHA-256 of content.',
          },
          seenAt: {
            type: 'string',
            format: 'datetime',
          },
          changed: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: ['template', 'memory', 'metadata', 'other'],
            },
            description:
              "What this revision changed since the one before it: template, memory, metadata (only the compile's metadata block) or other; template and memory may come together; [] for the oldest revision held; null when indexed before this was kept.",
          },
          memoryFiles: {
            type: 'array',
            items: {
              type: 'string',
            },
            description:
              'The memory files whose blocks changed (memfs-v2 file names, memfs-v1 paths such as persona); [] when the memory did not change or cannot be read file by file; null when changed is.',
          },
        },
      },
      hunk: {
        type: 'object',
        description:
          'A run of lines of a line diff; an unchanged run longer than a few lines is collapsed to skipped with no lines.',
        required: ['op', 'lines'],
        properties: {
          op: {
            type: 'string',
            knownValues: ['equal', 'insert', 'delete'],
          },
          lines: {
            type: 'array',
            items: {
              type: 'string',
            },
          },
          skipped: {
            type: 'integer',
            minimum: 0,
          },
        },
      },
      diffParts: {
        type: 'object',
        description:
          'A diff cut into the three parts of a prompt Letta compiled, each change in exactly one: the template (content with the core memory put back as {CORE_MEMORY}), the memory (the memfs projection) and the metadata block.',
        required: ['template', 'memory', 'metadata'],
        properties: {
          template: {
            type: 'array',
            items: {
              type: 'ref',
              ref: 'lex:xyz.quasigod.lab.letta.appview.defs#hunk',
            },
          },
          memory: {
            type: 'array',
            items: {
              type: 'ref',
              ref: 'lex:xyz.quasigod.lab.letta.appview.defs#hunk',
            },
          },
          metadata: {
            type: 'array',
            items: {
              type: 'ref',
              ref: 'lex:xyz.quasigod.lab.letta.appview.defs#hunk',
            },
          },
        },
      },
      changeView: {
        type: 'object',
        description:
          'One change of the change feed: a line of GET /v1/changes (with include=record, of GET /v1/changes?include=record).',
        required: ['seq', 'op', 'collection', 'uri', 'cid', 'flags', 'at'],
        nullable: ['cid', 'flags', 'record', 'changed'],
        properties: {
          seq: {
            type: 'integer',
            minimum: 1,
          },
          op: {
            type: 'string',
            knownValues: ['upsert', 'delete'],
          },
          collection: {
            type: 'string',
            format: 'nsid',
          },
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
            description: 'null on delete.',
          },
          flags: {
            type: 'array',
            items: {
              type: 'string',
            },
            description:
              'Flag names of a prompt, [] for other collections, null on delete.',
          },
          changed: {
            type: 'array',
            items: {
              type: 'string',
              knownValues: ['template', 'memory', 'metadata', 'other'],
            },
            description:
              "On a prompt upsert: what this version changed since the revision before it (template and memory may come together, metadata only alone; [] for a prompt's first version), null when logged before this was kept; null on deletes and other collections.",
          },
          at: {
            type: 'string',
            format: 'datetime',
          },
          record: {
            type: 'unknown',
            description:
              "With include=record, on an upsert: the record with this cid (a prompt's older version rebuilt from its revision history), or null when that version is no longer kept (then superseded is true).",
          },
          superseded: {
            type: 'boolean',
            description:
              'With include=record: true when the record with this cid is no longer kept (record is null).',
          },
        },
      },
      repoAccount: {
        type: 'object',
        required: ['active', 'status', 'hidden'],
        nullable: ['status'],
        properties: {
          active: {
            type: 'boolean',
          },
          status: {
            type: 'string',
            description:
              'The upstream account status when not active (takendown, deactivated, ...).',
          },
          hidden: {
            type: 'boolean',
            description:
              "Hidden by this index: inactive upstream, or on the operator's takedown list.",
          },
        },
      },
      repoSync: {
        type: 'object',
        description:
          'Sync 1.1 chain state; state is null before the verified firehose saw the repo.',
        required: ['state', 'rev', 'reason', 'since'],
        nullable: ['state', 'rev', 'reason', 'since'],
        properties: {
          state: {
            type: 'string',
            knownValues: ['synchronized', 'desynchronized', 'resyncing'],
          },
          rev: {
            type: 'string',
          },
          reason: {
            type: 'string',
          },
          since: {
            type: 'string',
            format: 'datetime',
          },
        },
      },
      repoRecordCounts: {
        type: 'object',
        required: ['prompts', 'conversations', 'agents'],
        properties: {
          prompts: {
            type: 'integer',
            minimum: 0,
          },
          conversations: {
            type: 'integer',
            minimum: 0,
          },
          agents: {
            type: 'integer',
            minimum: 0,
          },
        },
      },
      ingestStatus: {
        type: 'object',
        required: ['source', 'cursor', 'lagSeconds', 'lastEventAt', 'gap'],
        nullable: ['source', 'cursor', 'lagSeconds', 'lastEventAt', 'gap'],
        properties: {
          source: {
            type: 'string',
          },
          cursor: {
            type: 'integer',
            description:
              'The stored position of the source (a seq or a time_us).',
          },
          lagSeconds: {
            type: 'integer',
            minimum: 0,
            description:
              "Seconds since the newest event's time, rounded to whole seconds (the atproto data model has no fractions; GET /v1/stats gives them).",
          },
          lastEventAt: {
            type: 'string',
            format: 'datetime',
          },
          gap: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#ingestGap',
          },
        },
      },
      ingestGap: {
        type: 'object',
        description:
          "What the source reported it could not resume (a cursor older than Jetstream's window): backfill to close it.",
        required: ['reason', 'at', 'cursor', 'message', 'action'],
        nullable: ['cursor'],
        properties: {
          reason: {
            type: 'string',
          },
          at: {
            type: 'string',
          },
          cursor: {
            type: 'integer',
          },
          message: {
            type: 'string',
          },
          action: {
            type: 'string',
          },
        },
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetAgent: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getAgent',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One agent record (null when not indexed) and counts of the visible prompts naming it. REST: GET /v1/agents/{did}/{rkey}.',
        parameters: {
          type: 'params',
          required: ['did', 'rkey'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description: 'Record key of the agent.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['uri', 'agent', 'prompts'],
            nullable: ['agent'],
            properties: {
              uri: {
                type: 'string',
                format: 'at-uri',
              },
              agent: {
                type: 'unknown',
                description:
                  'The agent record as published, or null when it is not indexed.',
              },
              prompts: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#agentPromptCounts',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description:
              'The agent is neither indexed nor named by a visible prompt.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetChanges: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getChanges',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. A page of the change feed, oldest first: the lines of GET /v1/changes for the same since, limit and include. With include=record a page holds at most 50 changes, whatever limit asks (a prompt may be 200 kB). Resume with since = cursor; an empty page is the end of the feed for now. REST: GET /v1/changes (NDJSON there).',
        parameters: {
          type: 'params',
          properties: {
            since: {
              type: 'integer',
              minimum: 0,
              default: 0,
              description: 'The last seq read (0: from the start).',
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 1000,
              default: 1000,
              description: 'Most changes.',
            },
            include: {
              type: 'string',
              knownValues: ['record'],
              maxLength: 64,
              description:
                'record: each upsert carries its record (changeView.record).',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['changes', 'cursor'],
            properties: {
              changes: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#changeView',
                },
              },
              cursor: {
                type: 'integer',
                minimum: 0,
                description:
                  'The seq to pass as since for the next page: past every change this page read, those of hidden repos it left out included (since itself when there was none).',
              },
            },
          },
        },
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetConversation: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getConversation',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One conversation record, with the visible prompt in its slot. REST: GET /v1/conversations/{did}/{rkey}.',
        parameters: {
          type: 'params',
          required: ['did', 'rkey'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description: 'Record key of the conversation.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['uri', 'cid', 'did', 'rkey', 'record', 'prompt'],
            nullable: ['prompt'],
            properties: {
              uri: {
                type: 'string',
                format: 'at-uri',
              },
              cid: {
                type: 'string',
              },
              did: {
                type: 'string',
                format: 'did',
              },
              rkey: {
                type: 'string',
                format: 'record-key',
              },
              record: {
                type: 'unknown',
                description: 'The record as published.',
              },
              prompt: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#conversationPrompt',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description: 'No visible conversation at that key.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetPrompt: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getPrompt',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One prompt by repo and record key, with its flags and their reasons. REST: GET /v1/prompts/{did}/{rkey}.',
        parameters: {
          type: 'params',
          required: ['did', 'rkey'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description:
                'Record key of the prompt (the TID its conversation shares).',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#promptView',
          },
        },
        errors: [
          {
            name: 'NotFound',
            description:
              'No visible prompt at that key (none, deleted, or its repo hidden).',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetPromptByUri: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getPromptByUri',
    defs: {
      main: {
        type: 'query',
        description:
          "PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One prompt by its at-uri or by its conversation's at-uri (the prompt in the same slot). REST: GET /v1/prompts?uri=.",
        parameters: {
          type: 'params',
          required: ['uri'],
          properties: {
            uri: {
              type: 'string',
              format: 'at-uri',
              description: 'at-uri of a compiledPrompt or of its conversation.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'ref',
            ref: 'lex:xyz.quasigod.lab.letta.appview.defs#promptView',
          },
        },
        errors: [
          {
            name: 'NotFound',
            description: 'No visible prompt in that slot.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetPromptDiff: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getPromptDiff',
    defs: {
      main: {
        type: 'query',
        description:
          "PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. Line diff of content and of coreMemory between two revisions, what changed between them, and (for prompts in Letta's format) the diff of each part once (default: the previous revision against the newest). REST: GET /v1/prompts/{did}/{rkey}/diff.",
        parameters: {
          type: 'params',
          required: ['did', 'rkey'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description:
                'Record key of the prompt (the TID its conversation shares).',
            },
            from: {
              type: 'string',
              format: 'record-key',
              description: 'Older revision (default: the one before to).',
            },
            to: {
              type: 'string',
              format: 'record-key',
              description: 'Newer revision (default: the newest).',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: [
              'uri',
              'from',
              'to',
              'content',
              'coreMemory',
              'note',
              'changed',
              'memoryFiles',
              'parts',
            ],
            nullable: ['from', 'content', 'coreMemory', 'note', 'parts'],
            properties: {
              uri: {
                type: 'string',
                format: 'at-uri',
              },
              from: {
                type: 'string',
                description:
                  'null: diffed against nothing (the first revision).',
              },
              to: {
                type: 'string',
              },
              changed: {
                type: 'array',
                items: {
                  type: 'string',
                  knownValues: ['template', 'memory', 'metadata', 'other'],
                },
                description:
                  'What changed from from to to: template, memory, metadata or other, as on a revision; [] when from is null.',
              },
              memoryFiles: {
                type: 'array',
                items: {
                  type: 'string',
                },
                description: 'The memory files whose blocks differ.',
              },
              content: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#hunk',
                },
                description:
                  'null when the content of either revision is not available (see note).',
              },
              coreMemory: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#hunk',
                },
              },
              parts: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#diffParts',
                description:
                  "null unless both revisions are in Letta's format (the first revision: against nothing), or when content is not available.",
              },
              note: {
                type: 'string',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description: 'No such prompt, or no such revision of it.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetPromptRevision: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getPromptRevision',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One revision of a prompt with its content and coreMemory (null with a note when not kept). REST: GET /v1/prompts/{did}/{rkey}/revisions/{rev}.',
        parameters: {
          type: 'params',
          required: ['did', 'rkey', 'rev'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description:
                'Record key of the prompt (the TID its conversation shares).',
            },
            rev: {
              type: 'string',
              format: 'record-key',
              description: 'Revision (the commit rev, a TID).',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: [
              'uri',
              'rev',
              'cid',
              'compiledAt',
              'rawSystemHash',
              'memfsRevision',
              'contentHash',
              'seenAt',
              'contentKept',
              'content',
              'coreMemory',
              'note',
              'changed',
              'memoryFiles',
            ],
            nullable: [
              'compiledAt',
              'rawSystemHash',
              'memfsRevision',
              'contentHash',
              'content',
              'coreMemory',
              'note',
              'changed',
              'memoryFiles',
            ],
            properties: {
              uri: {
                type: 'string',
                format: 'at-uri',
              },
              rev: {
                type: 'string',
              },
              cid: {
                type: 'string',
              },
              compiledAt: {
                type: 'string',
              },
              rawSystemHash: {
                type: 'string',
              },
              memfsRevision: {
                type: 'string',
              },
              contentHash: {
                type: 'string',
                description: 'Lowercase hex SHA-256 of content.',
              },
              seenAt: {
                type: 'string',
                format: 'datetime',
              },
              changed: {
                type: 'array',
                items: {
                  type: 'string',
                  knownValues: ['template', 'memory', 'metadata', 'other'],
                },
                description:
                  "What this revision changed since the one before it: template, memory, metadata (only the compile's metadata block) or other; template and memory may come together; [] for the oldest revision held; null when indexed before this was kept.",
              },
              memoryFiles: {
                type: 'array',
                items: {
                  type: 'string',
                },
                description:
                  'The memory files whose blocks changed (memfs-v2 file names, memfs-v1 paths such as persona); [] when the memory did not change or cannot be read file by file; null when changed is.',
              },
              contentKept: {
                type: 'boolean',
                description:
                  'false for revisions indexed before revision content was kept.',
              },
              content: {
                type: 'string',
              },
              coreMemory: {
                type: 'string',
              },
              note: {
                type: 'string',
                description: 'Why content is null, when it is.',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description: 'No such prompt, or no such revision of it.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetPromptRevisions: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getPromptRevisions',
    defs: {
      main: {
        type: 'query',
        description:
          "PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. A prompt's revision history, newest first. REST: GET /v1/prompts/{did}/{rkey}/revisions.",
        parameters: {
          type: 'params',
          required: ['did', 'rkey'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
            rkey: {
              type: 'string',
              format: 'record-key',
              description:
                'Record key of the prompt (the TID its conversation shares).',
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 100,
              default: 50,
              description: 'Page size.',
            },
            cursor: {
              type: 'string',
              maxLength: 2048,
              description: 'Opaque cursor of the previous page.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['uri', 'items'],
            properties: {
              uri: {
                type: 'string',
                format: 'at-uri',
              },
              items: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#revisionView',
                },
              },
              cursor: {
                type: 'string',
                description:
                  'Pass back for older revisions; absent on the last page.',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description:
              'No visible prompt at that key, and no history of one.',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetRepo: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getRepo',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. One tracked repo: account status, Sync 1.1 state and visible record counts. REST: GET /v1/repos/{did}.',
        parameters: {
          type: 'params',
          required: ['did'],
          properties: {
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'DID or handle of the repo.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['did', 'handle', 'account', 'sync', 'records'],
            nullable: ['handle'],
            properties: {
              did: {
                type: 'string',
                format: 'did',
              },
              handle: {
                type: 'string',
                description: 'The verified handle, when there is one.',
              },
              account: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#repoAccount',
              },
              sync: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#repoSync',
              },
              records: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#repoRecordCounts',
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description:
              'The repo is not tracked by this index (or the handle is not known).',
          },
        ],
      },
    },
  },
  XyzQuasigodLabLettaAppviewGetStats: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.getStats',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. Counts of visible records and flags, and the ingestion cursor. REST: GET /v1/stats.',
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['prompts', 'conversations', 'agents', 'flags', 'ingest'],
            properties: {
              prompts: {
                type: 'integer',
                minimum: 0,
              },
              conversations: {
                type: 'integer',
                minimum: 0,
              },
              agents: {
                type: 'integer',
                minimum: 0,
              },
              flags: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#flagCounts',
              },
              ingest: {
                type: 'ref',
                ref: 'lex:xyz.quasigod.lab.letta.appview.defs#ingestStatus',
              },
            },
          },
        },
      },
    },
  },
  XyzQuasigodLabLettaAppviewListPrompts: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.listPrompts',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. A page of visible prompts in the order `sort` names (by default rkey descending, then did); items leave out content and coreMemory and carry contentBytes. REST: GET /v1/prompts.',
        parameters: {
          type: 'params',
          properties: {
            flag: {
              type: 'string',
              enum: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
                'ok',
              ],
              description:
                'Only prompts with this flag set; ok: only prompts with none.',
            },
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'Only prompts of this repo (DID or handle).',
            },
            agent: {
              type: 'string',
              format: 'at-uri',
              description: 'Only prompts naming this agent record.',
            },
            sort: {
              type: 'string',
              enum: ['created', 'compiled', 'indexed', 'recompiles', 'size'],
              default: 'created',
              description:
                'Order of the page: created, by rkey descending (a TID rkey is its creation time), then did; the others by their key descending, then did and rkey descending: compiled, newest compiledAt first (absent or not a datetime last); indexed, the time this index stored the current version, newest first; recompiles, most recompiles first; size, largest content (UTF-8 bytes) first (no content last). A cursor continues the order it was made in.',
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 100,
              default: 50,
              description: 'Page size.',
            },
            cursor: {
              type: 'string',
              maxLength: 2048,
              description: 'Opaque cursor of the previous page.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['items'],
            properties: {
              items: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#promptListItem',
                },
              },
              cursor: {
                type: 'string',
                description:
                  'Pass back for the next page; absent on the last page.',
              },
            },
          },
        },
      },
    },
  },
  XyzQuasigodLabLettaAppviewSearchPrompts: {
    lexicon: 1,
    id: 'xyz.quasigod.lab.letta.appview.searchPrompts',
    defs: {
      main: {
        type: 'query',
        description:
          'PROPOSAL, not published by the author of the xyz.quasigod.lab.letta record lexicons. Prompts whose content has all the words of q (runs of letters and digits, matched whole and case-insensitively), with the filters, orders (sort) and paging of listPrompts; each item has a snippet. REST: GET /v1/search.',
        parameters: {
          type: 'params',
          required: ['q'],
          properties: {
            q: {
              type: 'string',
              minLength: 1,
              maxLength: 4000,
              maxGraphemes: 1000,
              description: 'Words to find (at most 16).',
            },
            flag: {
              type: 'string',
              enum: [
                'orphaned',
                'mismatched',
                'staleTemplate',
                'staleMemory',
                'coreMemoryDetached',
                'invalid',
                'ok',
              ],
              description:
                'Only prompts with this flag set; ok: only prompts with none.',
            },
            did: {
              type: 'string',
              format: 'at-identifier',
              description: 'Only prompts of this repo (DID or handle).',
            },
            agent: {
              type: 'string',
              format: 'at-uri',
              description: 'Only prompts naming this agent record.',
            },
            sort: {
              type: 'string',
              enum: ['created', 'compiled', 'indexed', 'recompiles', 'size'],
              default: 'created',
              description:
                'Order of the page: created, by rkey descending (a TID rkey is its creation time), then did; the others by their key descending, then did and rkey descending: compiled, newest compiledAt first (absent or not a datetime last); indexed, the time this index stored the current version, newest first; recompiles, most recompiles first; size, largest content (UTF-8 bytes) first (no content last). A cursor continues the order it was made in.',
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 100,
              default: 50,
              description: 'Page size.',
            },
            cursor: {
              type: 'string',
              maxLength: 2048,
              description: 'Opaque cursor of the previous page.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['items'],
            properties: {
              items: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:xyz.quasigod.lab.letta.appview.defs#searchItem',
                },
              },
              cursor: {
                type: 'string',
                description:
                  'Pass back for the next page; absent on the last page.',
              },
            },
          },
        },
      },
    },
  },
} as const satisfies Record<string, LexiconDoc>
export const schemas = Object.values(schemaDict) satisfies LexiconDoc[]
export const lexicons: Lexicons = new Lexicons(schemas)

export function validate<T extends { $type: string }>(
  v: unknown,
  id: string,
  hash: string,
  requiredType: true,
): ValidationResult<T>
export function validate<T extends { $type?: string }>(
  v: unknown,
  id: string,
  hash: string,
  requiredType?: false,
): ValidationResult<T>
export function validate(
  v: unknown,
  id: string,
  hash: string,
  requiredType?: boolean,
): ValidationResult {
  return (requiredType ? is$typed : maybe$typed)(v, id, hash)
    ? lexicons.validate(`${id}#${hash}`, v)
    : {
        success: false,
        error: new ValidationError(
          `Must be an object with "${hash === 'main' ? id : `${id}#${hash}`}" $type property`,
        ),
      }
}

export const ids = {
  XyzQuasigodLabLettaAppviewDefs: 'xyz.quasigod.lab.letta.appview.defs',
  XyzQuasigodLabLettaAppviewGetAgent: 'xyz.quasigod.lab.letta.appview.getAgent',
  XyzQuasigodLabLettaAppviewGetChanges:
    'xyz.quasigod.lab.letta.appview.getChanges',
  XyzQuasigodLabLettaAppviewGetConversation:
    'xyz.quasigod.lab.letta.appview.getConversation',
  XyzQuasigodLabLettaAppviewGetPrompt:
    'xyz.quasigod.lab.letta.appview.getPrompt',
  XyzQuasigodLabLettaAppviewGetPromptByUri:
    'xyz.quasigod.lab.letta.appview.getPromptByUri',
  XyzQuasigodLabLettaAppviewGetPromptDiff:
    'xyz.quasigod.lab.letta.appview.getPromptDiff',
  XyzQuasigodLabLettaAppviewGetPromptRevision:
    'xyz.quasigod.lab.letta.appview.getPromptRevision',
  XyzQuasigodLabLettaAppviewGetPromptRevisions:
    'xyz.quasigod.lab.letta.appview.getPromptRevisions',
  XyzQuasigodLabLettaAppviewGetRepo: 'xyz.quasigod.lab.letta.appview.getRepo',
  XyzQuasigodLabLettaAppviewGetStats: 'xyz.quasigod.lab.letta.appview.getStats',
  XyzQuasigodLabLettaAppviewListPrompts:
    'xyz.quasigod.lab.letta.appview.listPrompts',
  XyzQuasigodLabLettaAppviewSearchPrompts:
    'xyz.quasigod.lab.letta.appview.searchPrompts',
} as const
