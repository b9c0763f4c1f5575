import json, sys

for line in sys.stdin:
    request = json.loads(line)
    target = request["task"].get("target_length", 200)
    print(max(0.0, 1 - abs(len(request["response"]) - target) / target), flush=True)
