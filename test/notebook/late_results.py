# nbconvert configuration for test/notebook/run.mjs (passed with --config).
#
# Why: Deno's kernel (2.x) now and then publishes a cell's `status: idle` on IOPub a millisecond before
# that cell's `execute_result` (traced with jupyter_client: idle at t, execute_result at t+1 ms, in
# about one notebook run in two on this 2-core machine). nbclient ends a cell at its idle message, so the
# result is dropped and the executed notebook shows a cell with no output although the code ran. A
# browser front end shows the late result; only headless execution loses it.
#
# What: after nbclient has seen a cell's idle message, keep reading IOPub for a short grace period and
# record any output of that same cell that arrives late. Output of a cell that genuinely produced none is
# unchanged, so a notebook cell that stops producing its result still fails the test.
import asyncio
from queue import Empty
from time import monotonic

import nbclient.client as _client
from nbclient.util import ensure_async

GRACE_SECONDS = 0.5
_OUTPUT_TYPES = {'execute_result', 'display_data', 'stream', 'error', 'update_display_data', 'clear_output'}
_poll_until_idle = _client.NotebookClient._async_poll_output_msg


async def _poll_until_idle_then_late_outputs(self, parent_msg_id, cell, cell_index):
    await _poll_until_idle(self, parent_msg_id, cell, cell_index)
    deadline = monotonic() + GRACE_SECONDS
    while (left := deadline - monotonic()) > 0:
        try:
            msg = await ensure_async(self.kc.iopub_channel.get_msg(timeout=left))
        except (Empty, asyncio.TimeoutError):
            return
        if msg['parent_header'].get('msg_id') == parent_msg_id and msg['msg_type'] in _OUTPUT_TYPES:
            self.log.info('late %s for cell %d recorded (sent after idle)', msg['msg_type'], cell_index)
            self.process_message(msg, cell, cell_index)


_client.NotebookClient._async_poll_output_msg = _poll_until_idle_then_late_outputs
