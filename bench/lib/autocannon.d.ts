// The part of autocannon's API the read benchmark uses (the package ships no types).
declare module 'autocannon' {
  export interface Histogram {
    average: number
    mean: number
    p50: number
    p90: number
    p99: number
    p99_9: number
    max: number
    total: number
  }
  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request
  }
  export interface Options {
    url: string
    connections?: number
    duration?: number
    amount?: number
    overallRate?: number
    pipelining?: number
    timeout?: number
    requests?: Request[]
  }
  export interface Result {
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
    duration: number
  }
  function autocannon(opts: Options): Promise<Result>
  export default autocannon
}
