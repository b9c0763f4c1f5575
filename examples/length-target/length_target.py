def reward(response, task):
    target = task.get("target_length", 200)
    return max(0.0, 1 - abs(len(response) - target) / target)
