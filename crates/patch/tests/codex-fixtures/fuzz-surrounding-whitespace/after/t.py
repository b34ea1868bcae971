def f():
	if x:
        return 2
