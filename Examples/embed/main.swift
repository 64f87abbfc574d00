print("embed placeholder")
