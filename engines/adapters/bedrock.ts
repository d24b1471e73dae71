import type { BedrockRuntimeClient, ConverseCommandOutput, ToolConfiguration } from '@aws-sdk/client-bedrock-runtime';
import type { ReplySchema } from '../../domain/reply-schemas';
import { z } from 'zod';
import { awsEngineError, awsSecrets, type AwsCredentials } from '../aws';
import { EngineError } from '../errors';
import { continuation, splitSystem, type AdapterCall, type AdapterOutput } from './common';

export interface BedrockTarget {
  region: string;
  /** undefined: the SDK's default provider chain. */
  credentials?: AwsCredentials;
  endpoint?: string;
  /** `service` or the assumed role's key: one SDK client per identity. */
  identity: string;
}

const ConverseOutput = z.object({
  output: z.object({
    message: z.object({
      content: z.array(z.object({ text: z.string().optional(), toolUse: z.object({ input: z.unknown() }).optional() })),
    }),
  }),
  stopReason: z.string(),
  usage: z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }),
});

/**
 * A structured reply is one tool whose input schema is the reply's. Converse forces a named tool only for Anthropic's
 * (and Mistral's) models; others are offered it and may answer in text, which is then parsed.
 */
function replyTool(reply: ReplySchema, maker: string): ToolConfiguration {
  return {
    tools: [{ toolSpec: { name: reply.name, inputSchema: { json: reply.schema } } }],
    ...(maker === 'anthropic' ? { toolChoice: { tool: { name: reply.name } } } : {}),
  };
}

/**
 * AWS Bedrock Converse through the AWS SDK (SigV4 signing, error shapes); not streamed: the dispatcher hands the whole
 * text to `onText`. Clients are cached per region, endpoint and identity (the service, or one organisation's role),
 * so connections are reused.
 */
export class BedrockAdapter {
  private readonly clients = new Map<string, { client: BedrockRuntimeClient; holder: { creds?: AwsCredentials } }>();

  async call(call: AdapterCall, target: BedrockTarget): Promise<AdapterOutput> {
    const { spec, reply } = call;
    // Anthropic's models refuse a final assistant turn ending in whitespace here as on their own API.
    const cont = continuation(call, spec.maker === 'anthropic');
    const { system, turns } = splitSystem(cont.messages);
    const secrets = awsSecrets(target.credentials);
    let out: ConverseCommandOutput;
    try {
      // Loaded by the first Bedrock call: a process without Bedrock engines never holds the AWS SDK (issue 31).
      const sdk = await import('@aws-sdk/client-bedrock-runtime');
      out = await this.client(target, sdk.BedrockRuntimeClient).send(
        new sdk.ConverseCommand({
          modelId: spec.model,
          messages: turns.map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: [{ text: m.content }] })),
          ...(system !== undefined ? { system: [{ text: system }] } : {}),
          inferenceConfig: {
            maxTokens: call.maxOutputTokens,
            ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
            ...(call.topP !== undefined ? { topP: call.topP } : {}),
            ...(call.stop !== undefined ? { stopSequences: call.stop } : {}),
          },
          ...(reply ? { toolConfig: replyTool(reply, spec.maker) } : {}),
        }),
        { abortSignal: call.signal ? AbortSignal.any([call.deadline, call.signal]) : call.deadline },
      );
    } catch (err) {
      throw awsEngineError(err, { engineId: spec.id, what: 'Bedrock Converse', deadline: call.deadline, signal: call.signal, secrets });
    }
    const parsed = ConverseOutput.safeParse(out);
    if (!parsed.success) {
      const where = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
        .join('; ');
      throw new EngineError('malformed', `${spec.id}: Bedrock Converse answered with an unexpected body (${where})`, {
        engineId: spec.id,
        status: 200,
      });
    }
    const body = parsed.data;
    return {
      text: cont.after(
        body.output.message.content.map((block) => (block.toolUse ? JSON.stringify(block.toolUse.input) : (block.text ?? ''))).join(''),
      ),
      finish: body.stopReason === 'max_tokens' || body.stopReason === 'model_context_window_exceeded' ? 'length' : 'stop',
      tokensIn: body.usage.inputTokens,
      tokensOut: body.usage.outputTokens,
      reasoningTokens: null,
    };
  }

  private client(target: BedrockTarget, Client: typeof BedrockRuntimeClient): BedrockRuntimeClient {
    const key = [target.region, target.endpoint ?? '', target.identity].join('\n');
    let entry = this.clients.get(key);
    if (!entry) {
      const holder: { creds?: AwsCredentials } = {};
      const client = new Client({
        region: target.region,
        endpoint: target.endpoint,
        // One attempt: the retry policy belongs to the workflow, which sees the classified error.
        maxAttempts: 1,
        // Assumed-role credentials rotate; the provider reads the ones handed to the latest call.
        credentials: target.credentials ? async () => holder.creds ?? Promise.reject(new Error('no credentials')) : undefined,
      });
      entry = { client, holder };
      this.clients.set(key, entry);
    }
    entry.holder.creds = target.credentials;
    return entry.client;
  }
}
