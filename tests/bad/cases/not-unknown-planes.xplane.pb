
	hello
	world"h