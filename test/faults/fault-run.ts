// What every product process of these tests runs with: a replay, no network, no rate limit
// in the way. (Not the chaos suite's baseline module: importing it would make these files
// depend on the test database setting, and run twice in the suite for nothing.)

export const COMMON_ENV: Record<string, string> = {
  PLC_URL: 'http://127.0.0.1:1',
  RATE_LIMIT_PER_MINUTE: '10000000',
  LOG_LEVEL: 'info',
}

export function replayArgs(file: string): string[] {
  return ['run', '--source', 'replay', '--replay-file', file]
}
