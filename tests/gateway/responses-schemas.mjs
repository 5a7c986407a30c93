// JSON Schemas of the Responses API's shapes, written by hand from the required fields,
// types and enums of OpenAI's published OpenAPI document (openai/openai-openapi,
// openapi.json, info.version 2.3.0): Response (with ModelResponseProperties and
// ResponseProperties), OutputMessage, OutputTextContent, ReasoningItem,
// ReasoningTextContent, FunctionToolCall, FunctionTool, ResponseUsage, ResponseError,
// and the stream events (ResponseCreatedEvent ... ResponseErrorEvent) this server sends.
// Restated here as openai-schemas.mjs restates the chat shapes; extra properties are
// allowed, as there. One deliberate difference: the document's ResponseUsage requires
// input_tokens_details.cache_write_tokens, which inflight does not count (its prefix
// cache shares blocks; it writes no billed cache entries), so it is left out and not
// required here.

const nullable = (schema) => ({ anyOf: [schema, { type: 'null' }] });
const integer = { type: 'integer' };
const number = { type: 'number' };
const string = { type: 'string' };
const constant = (value) => ({ type: 'string', enum: [value] });
const itemStatus = { type: 'string', enum: ['in_progress', 'completed', 'incomplete'] };

const outputText = {
  type: 'object',
  required: ['type', 'text', 'annotations', 'logprobs'],
  properties: { type: constant('output_text'), text: string, annotations: { type: 'array' }, logprobs: { type: 'array' } },
};

const reasoningText = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: constant('reasoning_text'), text: string },
};

const outputMessage = {
  type: 'object',
  required: ['id', 'type', 'role', 'content', 'status'],
  properties: {
    id: string, type: constant('message'), role: constant('assistant'), status: itemStatus,
    content: { type: 'array', items: outputText },
  },
};

const reasoningItem = {
  type: 'object',
  required: ['id', 'summary', 'type'],
  properties: {
    id: string, type: constant('reasoning'), status: itemStatus,
    summary: {
      type: 'array',
      items: { type: 'object', required: ['type', 'text'], properties: { type: constant('summary_text'), text: string } },
    },
    content: { type: 'array', items: reasoningText },
    encrypted_content: nullable(string),
  },
};

const functionCall = {
  type: 'object',
  required: ['type', 'call_id', 'name', 'arguments'],
  properties: { id: string, type: constant('function_call'), call_id: string, name: string, arguments: string, status: itemStatus },
};

export const outputItem = { anyOf: [outputMessage, reasoningItem, functionCall] };

const functionTool = {
  type: 'object',
  required: ['type', 'name', 'strict', 'parameters'],
  properties: {
    type: constant('function'), name: string, description: nullable(string),
    parameters: nullable({ type: 'object' }), strict: nullable({ type: 'boolean' }),
  },
};

const usage = {
  type: 'object',
  required: ['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens'],
  properties: {
    input_tokens: integer,
    input_tokens_details: { type: 'object', required: ['cached_tokens'], properties: { cached_tokens: integer } },
    output_tokens: integer,
    output_tokens_details: { type: 'object', required: ['reasoning_tokens'], properties: { reasoning_tokens: integer } },
    total_tokens: integer,
  },
};

const toolChoice = {
  anyOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    { type: 'object', required: ['type', 'name'], properties: { type: constant('function'), name: string } },
  ],
};

const textFormat = {
  anyOf: [
    { type: 'object', required: ['type'], properties: { type: constant('text') } },
    { type: 'object', required: ['type'], properties: { type: constant('json_object') } },
    {
      type: 'object',
      required: ['type', 'schema', 'name'],
      properties: { type: constant('json_schema'), name: string, schema: { type: 'object' }, strict: nullable({ type: 'boolean' }) },
    },
  ],
};

export const response = {
  type: 'object',
  required: ['id', 'object', 'created_at', 'error', 'incomplete_details', 'instructions', 'model', 'tools', 'output',
    'parallel_tool_calls', 'metadata', 'tool_choice', 'temperature', 'top_p'],
  properties: {
    id: string,
    object: constant('response'),
    status: { type: 'string', enum: ['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete'] },
    created_at: number,
    completed_at: nullable(number),
    error: nullable({
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string', enum: ['server_error', 'rate_limit_exceeded', 'invalid_prompt'] }, message: string },
    }),
    incomplete_details: nullable({
      type: 'object', properties: { reason: { type: 'string', enum: ['max_output_tokens', 'content_filter'] } },
    }),
    instructions: nullable(string),
    model: string,
    tools: { type: 'array', items: functionTool },
    output: { type: 'array', items: outputItem },
    parallel_tool_calls: { type: 'boolean' },
    metadata: nullable({ type: 'object', additionalProperties: string }),
    tool_choice: toolChoice,
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    max_output_tokens: nullable(integer),
    previous_response_id: nullable(string),
    reasoning: nullable({ type: 'object', properties: { effort: nullable(string), summary: nullable(string) } }),
    text: { type: 'object', properties: { format: textFormat } },
    truncation: nullable({ type: 'string', enum: ['auto', 'disabled'] }),
    usage,
    store: { type: 'boolean' },
    user: string,
  },
};

const event = (type, required, properties) => ({
  type: 'object',
  required: ['type', 'sequence_number', ...required],
  properties: { type: constant(type), sequence_number: integer, ...properties },
});
const itemPlace = { item_id: string, output_index: integer };
const partPlace = { ...itemPlace, content_index: integer };

/// Every stream event this server sends, by its type.
export const events = {
  'response.created': event('response.created', ['response'], { response }),
  'response.in_progress': event('response.in_progress', ['response'], { response }),
  'response.completed': event('response.completed', ['response'], { response }),
  'response.incomplete': event('response.incomplete', ['response'], { response }),
  'response.failed': event('response.failed', ['response'], { response }),
  'response.output_item.added': event('response.output_item.added', ['output_index', 'item'],
    { output_index: integer, item: outputItem }),
  'response.output_item.done': event('response.output_item.done', ['output_index', 'item'],
    { output_index: integer, item: outputItem }),
  'response.content_part.added': event('response.content_part.added',
    ['item_id', 'output_index', 'content_index', 'part'], { ...partPlace, part: { anyOf: [outputText, reasoningText] } }),
  'response.content_part.done': event('response.content_part.done',
    ['item_id', 'output_index', 'content_index', 'part'], { ...partPlace, part: { anyOf: [outputText, reasoningText] } }),
  'response.output_text.delta': event('response.output_text.delta',
    ['item_id', 'output_index', 'content_index', 'delta', 'logprobs'], { ...partPlace, delta: string, logprobs: { type: 'array' } }),
  'response.output_text.done': event('response.output_text.done',
    ['item_id', 'output_index', 'content_index', 'text', 'logprobs'], { ...partPlace, text: string, logprobs: { type: 'array' } }),
  'response.reasoning_text.delta': event('response.reasoning_text.delta',
    ['item_id', 'output_index', 'content_index', 'delta'], { ...partPlace, delta: string }),
  'response.reasoning_text.done': event('response.reasoning_text.done',
    ['item_id', 'output_index', 'content_index', 'text'], { ...partPlace, text: string }),
  'response.function_call_arguments.delta': event('response.function_call_arguments.delta',
    ['item_id', 'output_index', 'delta'], { ...itemPlace, delta: string }),
  'response.function_call_arguments.done': event('response.function_call_arguments.done',
    ['item_id', 'name', 'output_index', 'arguments'], { ...itemPlace, name: string, arguments: string }),
  error: event('error', ['code', 'message', 'param'], { code: nullable(string), message: string, param: nullable(string) }),
};

export const deletedResponse = {
  type: 'object',
  required: ['id', 'object', 'deleted'],
  properties: { id: string, object: constant('response'), deleted: { type: 'boolean', enum: [true] } },
};
